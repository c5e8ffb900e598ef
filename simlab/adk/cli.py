"""``simlab import adk SOURCE --domain D``: ADK eval sets (``*.evalset.json``, older ``*.test.json``
in either list shape) as simlab scenario files, and a suite per kind of case (fixed conversations
with the scripted simulator, user simulations with the rules simulator) that runs them with
repeated trials. Every file is planned before any is written (``Plan``): two cases or suites on one
target, or a target that exists without ``--force``, stop the import with nothing written."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simlab.errors import SpecError, UsageError

SUFFIXES = (".evalset.json", ".test.json")
SIMULATORS = {"fixed": "scripted", "simulated": "rules"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="an ADK eval set file (.evalset.json, .test.json) or a folder of them")
    parser.add_argument(
        "--domain", required=True, help="the simlab domain whose tools the agent calls (e.g. retail)"
    )
    parser.add_argument(
        "--criteria",
        help="ADK's test_config.json (default: the one beside each file; "
        "else ADK's defaults: trajectory 1.0, response match 0.8)",
    )
    parser.add_argument(
        "--out", default="scenarios/adk", help="folder for the scenario files (default scenarios/adk)"
    )
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
    return SpecError(
        f"{path}: {where}: {first['msg']} ({exc.error_count()} problems; the file does not follow "
        "ADK's eval set schema)"
    )


def load_criteria(path: Path) -> dict[str, Any]:
    from simlab.adk.schema import EvalConfig

    try:
        return EvalConfig.model_validate(_json(path)).criteria
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def set_id_of(path: Path, source: Path) -> str:
    """The eval set id of a file that names none (the older list shapes): its path relative to the
    folder imported, without the suffix, so ``a/simple.test.json`` and ``b/simple.test.json`` differ;
    a file given by itself: its name without the suffix."""
    relative = path.relative_to(source) if source.is_dir() else Path(path.name)
    text = relative.as_posix()
    for suffix in (*SUFFIXES, ".json"):
        text = text.removesuffix(suffix)
    return text


def load_eval_set(path: Path, set_id: str | None = None) -> Any:
    from simlab.adk.schema import eval_set_of

    try:
        return eval_set_of(_json(path), set_id or set_id_of(path, path.parent))
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def domain_checks(domain_ref: str) -> tuple[Any, list[str]]:
    """``(fits, tool names)``: ``fits(state)`` says why a state does not fit the domain's, or None."""
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

    return fits, list(domain.tool_names)


def state_check(domain_ref: str) -> Any:
    """``state -> why it does not fit the domain's state, or None``."""
    return domain_checks(domain_ref)[0]


@dataclass
class Plan:
    """Every file the import writes, planned before any is written: target → (text, where it comes from)."""

    files: dict[Path, tuple[str, str]] = field(default_factory=dict)
    clashes: list[str] = field(default_factory=list)

    def add(self, target: Path, text: str, origin: str) -> None:
        key = Path(os.path.normpath(target))
        if key in self.files:
            self.clashes.append(f"{key}: both {self.files[key][1]} and {origin} would be written here")
            return
        self.files[key] = (text, origin)

    def check(self, force: bool) -> None:
        """A clash, or a file that exists without ``force``: an error, before anything is written."""
        if self.clashes:
            raise UsageError(
                "\n".join(
                    [
                        *self.clashes,
                        f"{len(self.clashes)} clashes: nothing written; give the eval "
                        "sets (or cases) distinct ids, or import them separately with another --out",
                    ]
                )
            )
        existing = [p for p in self.files if p.exists()]
        if existing and not force:
            shown = [f"{p} exists" for p in existing[:10]]
            raise UsageError(
                "\n".join(
                    [
                        *shown,
                        f"{len(existing)} of the {len(self.files)} files exist; nothing "
                        "written; pass --force to overwrite them",
                    ]
                )
            )

    def write(self) -> None:
        for target, (text, _) in self.files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    from simlab.inert import one_line

    source = Path(args.source)
    files = _files(source)
    plan, notes, lines = Plan(), [], []
    checks = domain_checks(args.domain)
    given = load_criteria(Path(args.criteria)) if args.criteria else None
    for path in files:
        summary, file_notes = _plan_file(path, source, args, plan, checks, given)
        notes += file_notes
        lines.append(summary)
    if not plan.files:  # nothing to play: never "wrote 0 files; next: simlab run" a suite not written
        raise SpecError(
            [
                f"{source}: no eval case to import: the eval set holds none simlab can play",
                *dict.fromkeys(notes),
            ]
        )
    plan.check(args.force)
    plan.write()
    for note in dict.fromkeys(notes):
        print(f"note: {one_line(note)}")
    for line in lines:
        print(one_line(line))
    print(
        f"wrote {len(plan.files)} files; next: simlab validate {args.out} && simlab run --suite "
        f"{args.suites}/adk-SET-fixed.yaml --agent YOUR_AGENT (and -simulated.yaml with --simulator MODEL)"
    )
    return 0


def _plan_file(
    path: Path, source: Path, args: argparse.Namespace, plan: Plan, checks: tuple[Any, list[str]], given: Any
) -> tuple[str, list[str]]:
    """Plan one file's scenarios and suites; return its summary line and its notes."""
    import yaml

    from simlab.adk.convert import convert_case, criteria_of, ignored_options, slug, unplayable

    eval_set = load_eval_set(path, set_id_of(path, source))
    beside = path.parent / "test_config.json"
    criteria = criteria_of(given if given is not None else load_criteria(beside) if beside.exists() else None)
    notes = ignored_options(criteria)
    out, suites = Path(args.out), Path(args.suites)
    by_kind: dict[str, list[str]] = {}
    folder = out / slug(eval_set.eval_set_id)
    skipped = 0
    for case in eval_set.eval_cases:
        why, left_out = unplayable(case)
        notes += left_out
        if why is not None:
            notes.append(f"{path}: case {case.eval_id!r} is not imported: {why}")
            skipped += 1
            continue
        converted = convert_case(eval_set, case, criteria, args.domain, checks[0], checks[1])
        target = folder / f"{slug(case.eval_id)}.yaml"
        plan.add(
            target,
            yaml.safe_dump(converted.scenario, sort_keys=False, allow_unicode=True),
            f"{path} (case {case.eval_id!r})",
        )
        by_kind.setdefault(converted.kind, []).append(os.path.relpath(target, suites))
        notes += converted.notes
    for kind, paths in by_kind.items():
        suite_id = f"adk-{slug(eval_set.eval_set_id)}-{kind}"
        suite = {
            "id": suite_id,
            "scenarios": paths,
            "simulator": SIMULATORS[kind],
            "trials": args.trials,
            "gates": ["pass^1 >= 0.8"],
        }
        plan.add(
            suites / f"{suite_id}.yaml", yaml.safe_dump(suite, sort_keys=False), f"{path} ({kind} suite)"
        )
    kinds = ", ".join(
        [*(f"{len(v)} {k}" for k, v in by_kind.items()), *([f"{skipped} not imported"] if skipped else [])]
    )
    thresholds = ", ".join(f"{n} {c.threshold:g}" for n, c in criteria.items())
    return f"{path}: {len(eval_set.eval_cases)} cases ({kinds}); criteria: {thresholds}", notes
