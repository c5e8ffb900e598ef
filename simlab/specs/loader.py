"""Load and check spec files. Every problem names file, line and field; nothing half-loads."""

from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from simlab.errors import SpecError
from simlab.specs.config import ProjectConfig, Suite
from simlab.specs.errors import format_validation_error
from simlab.specs.persona import Persona
from simlab.specs.scenario import Scenario
from simlab.specs.yamlio import LineMap, line_for, load_yaml_file

M = TypeVar("M", bound=BaseModel)
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class Loaded:
    """A validated spec with where it came from."""

    spec: Any
    path: Path
    sha256: str
    lines: LineMap


@dataclass
class LoadedScenario(Loaded):
    spec: Scenario
    persona: Persona
    persona_path: Path | None = None
    persona_sha256: str | None = None


def load_model(path: Path, model: type[M]) -> Loaded:
    data, lines = load_yaml_file(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}:1: expected a mapping of fields, got {type(data).__name__}")
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, str(path), lines)) from None
    return Loaded(spec=spec, path=path, sha256=_sha256(path), lines=lines)


def load_personas(folder: Path) -> dict[str, Loaded]:
    """Every persona in ``folder``, by id. Collects all problems before raising."""
    personas: dict[str, Loaded] = {}
    problems: list[str] = []
    if not folder.is_dir():
        return personas
    for path in sorted(p for p in folder.iterdir() if p.suffix in YAML_SUFFIXES):
        try:
            loaded = load_model(path, Persona)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        pid = loaded.spec.id
        if pid in personas:
            problems.append(f"{path}: id: persona {pid!r} is also defined in {personas[pid].path}")
        personas[pid] = loaded
    if problems:
        raise SpecError(problems)
    return personas


def scenario_files(paths: list[str | Path], base: Path | None = None) -> list[Path]:
    """Expand files, folders (recursively) and globs into scenario files, in a stable order."""
    found: dict[Path, None] = {}
    for entry in paths:
        text = str(entry)
        candidate = Path(text) if base is None or Path(text).is_absolute() else base / text
        matches = [Path(m) for m in sorted(glob.glob(str(candidate), recursive=True))] if glob.has_magic(
            str(candidate)
        ) else [candidate]
        if not matches:
            raise SpecError(f"{candidate}: no scenario file matches this pattern")
        for match in matches:
            if match.is_dir():
                for path in sorted(match.rglob("*")):
                    if path.suffix in YAML_SUFFIXES and path.is_file():
                        found[path] = None
            elif match.exists():
                found[match] = None
            else:
                raise SpecError(f"{match}: no such file or folder")
    return list(found)


def load_scenarios(files: list[Path], personas: dict[str, Loaded]) -> list[LoadedScenario]:
    """Load and resolve personas. All problems at once.

    Checks against the domain (tools, initial state) live in ``simlab.env.checks``.
    """
    problems: list[str] = []
    loaded: list[LoadedScenario] = []
    seen: dict[str, Path] = {}
    for path in files:
        try:
            item = load_model(path, Scenario)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        scenario: Scenario = item.spec
        where = lambda *loc: f"{path}:{line_for(item.lines, loc) or 1}"  # noqa: E731
        if scenario.id in seen:
            problems.append(f"{where('id')}: id: scenario {scenario.id!r} is also defined in {seen[scenario.id]}")
        seen[scenario.id] = path
        if isinstance(scenario.persona, str):
            ref = personas.get(scenario.persona)
            if ref is None:
                known = ", ".join(sorted(personas)) or "none found"
                problems.append(
                    f"{where('persona')}: persona: unknown persona {scenario.persona!r} (known: {known})"
                )
                continue
            entry = LoadedScenario(item.spec, path, item.sha256, item.lines, ref.spec, ref.path, ref.sha256)
        else:
            entry = LoadedScenario(item.spec, path, item.sha256, item.lines, scenario.persona)
        loaded.append(entry)
    if problems:
        raise SpecError(problems)
    return loaded


def load_config(path: Path) -> ProjectConfig:
    if not path.exists():
        return ProjectConfig()
    return load_model(path, ProjectConfig).spec


def load_suite(path: Path) -> Loaded:
    if not path.exists():
        raise SpecError(f"{path}: no such suite file")
    return load_model(path, Suite)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
