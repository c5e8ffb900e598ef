"""``simlab import adk SOURCE --domain D``: ADK eval sets (``*.evalset.json``, older ``*.test.json``)
as simlab scenario files, and a suite per kind of case (fixed conversations with the scripted
simulator, user simulations with the rules simulator) that runs them with repeated trials."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simlab.errors import SpecError, UsageError

SUFFIXES = (".evalset.json", ".test.json")
SIMULATORS = {"fixed": "scripted", "simulated": "rules"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="an ADK eval set file (.evalset.json, .test.json) or a folder of them")
    parser.add_argument("--domain", required=True, help="the simlab domain whose tools the agent calls (e.g. retail)")
    parser.add_argument("--criteria", help="ADK's test_config.json (default: the one beside each file; "
                                           "else ADK's defaults: trajectory 1.0, response match 0.8)")
    parser.add_argument("--out", default="scenarios/adk", help="folder for the scenario files (default scenarios/adk)")
    parser.add_argument("--suites", default="suites", help="folder for the suite files (default suites)")
    parser.add_argument("--trials", type=int, default=4, help="trials per case in the suites (default 4)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist")


def _files(source: Path) -> list[Path]:
    if source.is_dir():
        found = sorted(p for p in source.rglob("*.json") if p.name.endswith(SUFFIXES))
        if not found:
            raise UsageError(f"{source}: no {' or '.join('*' + s for s in SUFFIXES)} files in this folder")
        return found
    if not source.is_file():
        raise UsageError(f"{source}: no such file or folder")
    return [source]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: not a JSON file ({exc})") from None


def _invalid(path: Path, exc: ValidationError) -> SpecError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top)"
    return SpecError(f"{path}: {where}: {first['msg']} ({exc.error_count()} problems; the file does not follow "
                     "ADK's eval set schema)")


def load_criteria(path: Path) -> dict[str, Any]:
    from simlab.adk.schema import EvalConfig

    try:
        return EvalConfig.model_validate(_json(path)).criteria
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def load_eval_set(path: Path) -> Any:
    from simlab.adk.schema import eval_set_of

    stem = path.name.removesuffix(".evalset.json").removesuffix(".test.json").removesuffix(".json")
    try:
        return eval_set_of(_json(path), stem)
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def state_check(domain_ref: str) -> Any:
    """``state -> why it does not fit the domain's state, or None``."""
    from simlab.env.domain import load_domain
    from simlab.specs.typewalk import unknown_keys

    domain = load_domain(domain_ref)

    def fits(state: dict[str, Any]) -> str | None:
        unknown = unknown_keys(domain.state_model, state)
        if unknown:
            return "unknown keys: " + ", ".join(".".join(map(str, loc)) for loc, _ in unknown[:5])
        try:
            domain.build_state(state)
        except ValidationError as exc:
            return f"it does not validate as the domain's state ({exc.error_count()} errors)"
        return None

    return fits


def run(args: argparse.Namespace) -> int:
    import yaml

    from simlab.adk.convert import convert_case, criteria_of, slug
    from simlab.inert import one_line

    files = _files(Path(args.source))
    fits = state_check(args.domain)
    given = load_criteria(Path(args.criteria)) if args.criteria else None
    out, suites = Path(args.out), Path(args.suites)
    written: list[Path] = []
    for path in files:
        eval_set = load_eval_set(path)
        beside = path.parent / "test_config.json"
        criteria = criteria_of(given if given is not None else load_criteria(beside) if beside.exists() else None)
        by_kind: dict[str, list[str]] = {}
        folder = out / slug(eval_set.eval_set_id)
        for case in eval_set.eval_cases:
            converted = convert_case(eval_set, case, criteria, args.domain, fits)
            target = folder / f"{slug(case.eval_id)}.yaml"
            _write(target, yaml.safe_dump(converted.scenario, sort_keys=False, allow_unicode=True), args.force)
            written.append(target)
            by_kind.setdefault(converted.kind, []).append(os.path.relpath(target, suites))
            for note in converted.notes:
                print(f"note: {one_line(note)}")
        for kind, paths in by_kind.items():
            suite = {"id": f"adk-{slug(eval_set.eval_set_id)}-{kind}", "scenarios": paths,
                     "simulator": SIMULATORS[kind], "trials": args.trials, "gates": ["pass^1 >= 0.8"]}
            target = suites / f"adk-{slug(eval_set.eval_set_id)}-{kind}.yaml"
            _write(target, yaml.safe_dump(suite, sort_keys=False), args.force)
            written.append(target)
        kinds = ", ".join(f"{len(v)} {k}" for k, v in by_kind.items())
        thresholds = ", ".join(f"{n} {c.threshold:g}" for n, c in criteria.items())
        print(f"{one_line(path)}: {len(eval_set.eval_cases)} cases ({kinds}); criteria: {thresholds}")
    print(f"wrote {len(written)} files; next: simlab validate {out} && simlab run --suite "
          f"{suites}/adk-SET-fixed.yaml --agent YOUR_AGENT (and -simulated.yaml with --simulator MODEL)")
    return 0


def _write(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
