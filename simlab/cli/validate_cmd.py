"""``simlab validate``: check every spec and cross-reference; report all problems at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simlab.env.checks import check_scenarios
from simlab.errors import SpecError
from simlab.specs import ProjectConfig, Suite, load_config, load_model, load_personas, load_scenarios, scenario_files
from simlab.specs.loader import YAML_SUFFIXES


def validate_command(args: argparse.Namespace) -> int:
    config = load_config(Path("simlab.yaml"))
    problems: list[str] = []
    try:
        personas = load_personas(Path(config.personas))
    except SpecError as exc:
        problems.extend(exc.problems)
        personas = {}
    scenario_paths: list[Path] = []
    suites = 0
    try:
        for path in scenario_files(args.paths or config.scenarios):
            kind = _kind(path, Path(config.personas))
            if kind == "persona":
                continue  # already loaded with the personas folder
            if kind in ("suite", "config"):
                try:
                    load_model(path, Suite if kind == "suite" else ProjectConfig)
                    suites += 1
                except SpecError as exc:
                    problems.extend(exc.problems)
                continue
            scenario_paths.append(path)
    except SpecError as exc:
        problems.extend(exc.problems)
    scenarios = []
    try:
        scenarios = load_scenarios(scenario_paths, personas)
        check_scenarios(scenarios)
    except SpecError as exc:
        problems.extend(exc.problems)
    if problems:
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found", file=sys.stderr)
        return SpecError.exit_code
    extra = f", {suites} suite/config file{'s' if suites != 1 else ''}" if suites else ""
    print(f"ok: {len(scenarios)} scenarios, {len(personas)} personas{extra}")
    return 0


def _kind(path: Path, personas_dir: Path) -> str:
    if path.name in ("simlab.yaml", "simlab.yml"):
        return "config"
    if path.suffix.lower() not in YAML_SUFFIXES:
        return "scenario"
    parents = {p.name for p in path.parents}
    if path.resolve().parent == personas_dir.resolve() or "personas" in parents:
        return "persona"
    if "suites" in parents:
        return "suite"
    return "scenario"
