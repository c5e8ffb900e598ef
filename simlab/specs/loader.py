"""Load and check spec files. Every problem names file, line and field; nothing half-loads."""

from __future__ import annotations

import glob
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from simlab.errors import SpecError
from simlab.redact import scrub
from simlab.specs.config import ProjectConfig, Suite
from simlab.specs.errors import format_validation_error
from simlab.specs.persona import Persona
from simlab.specs.scenario import Scenario
from simlab.specs.yamlio import LineMap, line_for, load_yaml_bytes, read_spec_bytes

M = TypeVar("M", bound=BaseModel)
YAML_SUFFIXES = (".yaml", ".yml")
ADK_SUFFIXES = (".evalset.json", ".test.json")
# Why not run an eval set on the fly: the import needs the domain whose tools the agent calls, says
# what it could not carry over (a state that does not fit the domain), and splits fixed from
# simulated cases (different simulators); a run pins scenario files by path and sha256, so the
# scenarios it played should be files a user has seen and kept, not a temporary conversion.
_IMPORT_ADK = (
    "simlab import adk {} --domain DOMAIN (it writes scenario files and suites and says what it "
    "could not carry over), then simlab run --suite the suite it writes"
)


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


def load_model(path: Path, model: type[M], *, empty_ok: bool = False) -> Loaded:
    """``path`` as a ``model``; errors name file, line and field. With ``empty_ok`` an empty file
    (or one of comments only) is the model's defaults. ``sha256`` is of the bytes parsed."""
    raw = read_spec_bytes(path)
    data, lines = load_yaml_bytes(raw, path, empty_ok=empty_ok)
    if data is None and empty_ok:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}:{lines.get((), 1)}: expected a mapping of fields, got {_kind(data)}")
    try:
        spec = model.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, str(path), lines, model=model)) from None
    return Loaded(spec=spec, path=path, sha256=hashlib.sha256(raw).hexdigest(), lines=lines)


def load_personas(folder: Path) -> dict[str, Loaded]:
    """Every persona in ``folder``, by id. Collects all problems before raising."""
    personas: dict[str, Loaded] = {}
    problems: list[str] = []
    if not folder.is_dir():
        return personas
    for path in sorted(p for p in folder.iterdir() if _is_spec_file(p)):
        try:
            loaded = load_model(path, Persona)
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        pid = loaded.spec.id
        if pid in personas:
            first = personas[pid]
            problems.append(
                f"{path}:{line_for(loaded.lines, ('id',))}: id: persona {pid!r} is also defined in "
                f"{first.path}:{line_for(first.lines, ('id',))}"
            )
            continue
        personas[pid] = loaded
    if problems:
        raise SpecError(problems)
    return personas


def scenario_files(paths: Sequence[str | Path], base: Path | None = None) -> list[Path]:
    """Expand files, folders (recursively) and globs into scenario files, in a stable order.

    Folders and globs contribute ``.yaml``/``.yml`` files only, skipping hidden ones (editor
    backups, ``.git``); a file named explicitly is taken as it is. A path or pattern that
    yields no file is an error; the same file reached twice is listed once.
    """
    found: dict[Path, Path] = {}
    for entry in paths:
        text = str(entry)
        candidate = Path(text) if base is None or Path(text).is_absolute() else base / text
        if glob.has_magic(str(candidate)):
            matches = [Path(m) for m in sorted(glob.glob(str(candidate), recursive=True))]
            if not matches:
                raise SpecError(f"{candidate}: no scenario file matches this pattern")
            files = [m for m in matches if m.is_dir() or _is_spec_file(m)]
        elif candidate.exists() and candidate.name.endswith(ADK_SUFFIXES):
            raise SpecError(f"{candidate}: an ADK eval set is imported, not run: {_IMPORT_ADK.format(text)}")
        elif candidate.exists():
            files = [candidate]
        else:
            raise SpecError(f"{candidate}: no such file or folder")
        yielded = [path for match in files for path in _expand(match)]
        if not yielded:
            adk = candidate.is_dir() and any(p.name.endswith(ADK_SUFFIXES) for p in candidate.rglob("*"))
            raise SpecError(
                f"{candidate}: no scenario files (.yaml, .yml) here"
                + (
                    f"; it holds ADK eval sets, which are imported, not run: {_IMPORT_ADK.format(text)}"
                    if adk
                    else ""
                )
            )
        for path in yielded:
            found.setdefault(path.resolve(), _tidy(path))
    return list(found.values())


def _tidy(path: Path) -> Path:
    """A relative path as the project names it: ``suites/../scenarios/a.yaml`` (reached through a
    suite) is ``scenarios/a.yaml`` in every message and pin; resolved, so a symlinked folder's
    ``..`` is where the file really is. A path outside the working folder stays as it was."""
    if path.is_absolute() or ".." not in path.parts:
        return path
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _expand(match: Path) -> list[Path]:
    if not match.is_dir():
        return [match]
    return [p for p in sorted(match.rglob("*")) if _is_spec_file(p) and not _hidden(p.relative_to(match))]


def _is_spec_file(path: Path) -> bool:
    return path.suffix.lower() in YAML_SUFFIXES and not path.name.startswith(".") and path.is_file()


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def load_scenarios(files: list[Path], personas: dict[str, Loaded]) -> list[LoadedScenario]:
    """Load and resolve personas. All problems at once.

    Checks against the domain (tools, initial state) live in ``simlab.env.checks``.
    """
    entries, problems = read_scenarios(files, personas)
    if problems:
        raise SpecError(problems)
    return [e for e in entries if isinstance(e, LoadedScenario)]


def read_scenarios(files: list[Path], personas: dict[str, Loaded]) -> tuple[list[Loaded], list[str]]:
    """Every scenario file as far as it reads, and every problem of every file.

    A file that validates becomes a ``LoadedScenario``. One that does not, but parses as a
    mapping, becomes a ``Loaded`` whose spec is a partial ``Scenario`` holding just the fields
    that validate on their own (``model_fields_set`` names them), so that ``simlab validate`` can
    check its domain, tools and state in the same pass as its schema errors.
    """
    problems: list[str] = []
    loaded: list[Loaded] = []
    seen: dict[str, tuple[Path, LineMap]] = {}
    for path in files:
        try:
            item = load_model(path, Scenario)
        except SpecError as exc:
            problems.extend(exc.problems)
            partial = read_partial(path, Scenario)
            if partial is not None:
                loaded.append(partial)
                problems.extend(_cross_problems(partial, personas, seen))
            continue
        problems.extend(_cross_problems(item, personas, seen))
        scenario: Scenario = item.spec
        if isinstance(scenario.persona, str):
            ref = personas.get(scenario.persona)
            if ref is None:
                loaded.append(item)  # still checked against its domain
                continue
            entry = LoadedScenario(item.spec, path, item.sha256, item.lines, ref.spec, ref.path, ref.sha256)
        else:
            entry = LoadedScenario(item.spec, path, item.sha256, item.lines, scenario.persona)
        loaded.append(entry)
    return loaded, problems


def _cross_problems(
    item: Loaded, personas: dict[str, Loaded], seen: dict[str, tuple[Path, LineMap]]
) -> list[str]:
    """A repeated scenario id, an unknown persona (for the fields of ``item`` that are set)."""
    scenario, path, given = item.spec, item.path, item.spec.model_fields_set
    where = lambda *loc: f"{path}:{line_for(item.lines, loc) or 1}"  # noqa: E731
    problems = []
    if "id" in given:
        if scenario.id in seen:
            first, first_lines = seen[scenario.id]
            problems.append(
                f"{where('id')}: id: scenario {scenario.id!r} is also defined in "
                f"{first}:{line_for(first_lines, ('id',)) or 1}"
            )
        seen.setdefault(scenario.id, (path, item.lines))
    if "persona" in given and isinstance(scenario.persona, str) and scenario.persona not in personas:
        known = ", ".join(sorted(personas)) or "none found"
        problems.append(f"{where('persona')}: persona: unknown persona {scenario.persona!r} (known: {known})")
    return problems


def read_partial(path: Path, model: type[M]) -> Loaded | None:
    """The fields of a spec file that validate on their own, as a partial ``model`` (built
    without validation; ``model_fields_set`` names the fields it holds), or None when the file is
    not a YAML mapping at all."""
    try:
        raw = read_spec_bytes(path)
        data, lines = load_yaml_bytes(raw, path)
    except SpecError:
        return None  # not YAML: nothing more to check
    if not isinstance(data, dict):
        return None
    return Loaded(
        spec=model.model_construct(**_valid_fields(model, data)),
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        lines=lines,
    )


def _valid_fields(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """``{field: value}`` for each field of ``model`` in ``data`` that validates by itself; a
    nested spec model that does not is salvaged the same way."""
    good: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name not in data:
            continue
        try:
            good[name] = TypeAdapter(field.annotation or Any).validate_python(data[name])
        except ValidationError:
            sub = field.annotation
            if isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(data[name], dict):
                good[name] = sub.model_construct(**_valid_fields(sub, data[name]))
        except Exception:  # an annotation pydantic cannot adapt alone: leave the field out
            continue
    return good


def load_config(path: Path) -> ProjectConfig:
    if not path.exists():
        return ProjectConfig()
    return load_model(path, ProjectConfig).spec


def load_suite(path: Path) -> Loaded:
    if not path.exists():
        raise SpecError(f"{path}: no such suite file")
    return load_model(path, Suite)


_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        if _ASSIGNMENT.match(value):  # never quoted: its values are likely secrets
            names = re.findall(r"(?:^|\s)(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=", value)[:3]
            return "a string of NAME=value lines (an environment file such as .env?): " + ", ".join(
                f"{n}=***" for n in names
            )
        return f"a string ({scrub(value[:40])!r})"
    return type(value).__name__
