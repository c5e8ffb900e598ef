"""``simlab lint``: is each scenario solvable and sound, before any money is spent (no model is
asked; the checks are ``graders/lint.py``'s). Also run by ``simlab validate --deep``.

The files are read and checked as ``simlab validate`` reads them; a scenario that does not
validate is reported (exit 2) and not linted. Findings go to stderr as ``file:line: field: what
is wrong; fix: what to do`` (warnings prefixed ``warning:``); exit 2 on an error, 0 on warnings only.

Which simulator plays a scenario's user decides what it can say and which phrases it reads:
``--simulator``, else the simulator of a suite that names the scenario (each one's, when several
do), else ``scripted`` for a scenario with a script, else simlab.yaml's, else ``rules``.

Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): the work is imported in
``run``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.cli.argtypes import add_paths, add_simulator_kind, configured_simulator

if TYPE_CHECKING:
    from simlab.cli.validate_cmd import Collected

DESCRIPTION = (
    "Check that each scenario can be solved: every value its expected actions need is obtainable, "
    "the expected actions replayed on the domain reach the expected state, its phrases can be "
    "matched, and its expectations do not contradict each other. No model is called."
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_paths(parser, "scenario or suite files or folders (default: the project's scenarios)")
    add_simulator_kind(
        parser,
        ("rules", "scripted", "llm", "replay"),
        "the simulator kind that plays every user (default: each scenario's suite's, "
        "scripted for a scenario with a script, else simlab.yaml's, else rules)",
    )


class Linted:
    """Every finding, how many scenarios were linted, and how long it took."""

    def __init__(self, findings: list[Any], scenarios: int, seconds: float) -> None:
        self.findings, self.scenarios, self.seconds = findings, scenarios, seconds


def run(args: argparse.Namespace) -> int:
    from simlab.cli.validate_cmd import collect, place_key
    from simlab.errors import SpecError

    found = collect(args.paths)
    linted = lint_entries(found, args.simulator)
    errors = sorted(
        [*found.report.problems, *(f.text() for f in linted.findings if f.severity == "error")],
        key=place_key,
    )
    warnings = sorted((f.text() for f in linted.findings if f.severity == "warning"), key=place_key)
    for line in errors:
        print(line, file=sys.stderr)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    summary = (
        f"{linted.scenarios} scenario{'s' if linted.scenarios != 1 else ''} linted in "
        f"{linted.seconds:.2f}s: {len(errors)} error{'s' if len(errors) != 1 else ''}, "
        f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
    )
    if errors:
        print(summary, file=sys.stderr)
        return SpecError.exit_code
    print(f"ok: {summary}")
    return 0


def lint_entries(found: Collected, simulator: str | None) -> Linted:
    """Lint every scenario of ``found`` that validates against its domain."""
    from simlab.env.checks import check_against_domain
    from simlab.graders.lint import lint_scenario
    from simlab.specs.loader import LoadedScenario

    started = time.perf_counter()
    kinds = _kinds(found)
    findings: list[Any] = []
    seen: set[str] = set()
    memo: dict[str, Any] = {}
    count = 0
    for entry in found.entries:
        if not isinstance(entry, LoadedScenario):
            continue
        domain, problems = check_against_domain(entry)
        if domain is None or problems:
            continue  # collect reported them
        count += 1
        chosen = [simulator] if simulator else kinds.get(entry.path.resolve()) or [_default(entry, found)]
        for kind in chosen:
            for finding in lint_scenario(entry, domain, kind, memo):
                if finding.text() not in seen:
                    seen.add(finding.text())
                    findings.append(finding)
    return Linted(findings, count, time.perf_counter() - started)


def _kinds(found: Collected) -> dict[Path, list[str]]:
    """The simulator kinds of the suites that name each scenario file (a suite that sets one)."""
    kinds: dict[Path, list[str]] = {}
    for suite, named in found.suites:
        spec = suite.spec.__dict__.get("simulator")
        if spec is None:
            continue
        for path in named:
            listed = kinds.setdefault(path.resolve(), [])
            if spec.kind not in listed:
                listed.append(spec.kind)
    return kinds


def _default(entry: Any, found: Collected) -> str:
    if entry.spec.user.script:
        return "scripted"
    return configured_simulator(found.config)
