"""``simlab gate`` and ``simlab compare``: decide a nightly build; tell a regression from noise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simlab.inert import one_line
from simlab.report.build import build, project_run
from simlab.report.compare_runs import compare, compare_exit
from simlab.report.digest import digest
from simlab.report.fmt import change
from simlab.report.gates import GateReport, gate_run
from simlab.report.junit import junit_xml
from simlab.report.step_summary import write_step_summary
from simlab.report.terminal import report_console
from simlab.report.why import mode_change_lines
from simlab.results.figures import PooledChange, RunSummary, ScenarioChange
from simlab.specs import Suite, load_suite

STATUS_STYLE = {"pass": "green", "fail": "bold red", "inconclusive": "yellow"}


def _summary_of(target: str) -> RunSummary:
    return build(project_run(target), write=False)


def check_gates(folder: Path, suite: Suite, *, junit: str | None, console: Console,
                suite_path: str | Path | None = None) -> int:
    """Evaluate the suite's gates on a finished run; print, write JUnit, return the exit code. Only
    the suite's own ``allow_unjudged`` lets unjudged trials count as passes here. The run must be
    the suite's plan: read from ``suite_path``, or as the run recorded it when it was played from
    this suite (``simlab run --suite``)."""
    summary = build(folder, allow_unjudged=list(suite.allow_unjudged or []),
                    summary_evaluators=list(suite.summary_evaluators))
    report = gate_run(folder, summary, suite, suite_path=suite_path, load_baseline=_summary_of)
    print_gates(report, console)
    write_step_summary(summary, report, suite.id)
    if junit:
        trials = digest(folder, allow_unjudged=summary.unjudged.allowed_kinds)
        Path(junit).write_text(junit_xml(summary, report, suite.id, trials), encoding="utf-8")
        console.print(Text(f"junit: {one_line(junit)}"))
    return report.exit_code


def print_gates(report: GateReport, console: Console) -> None:
    """``GateReport.lines`` as plain lines, readable in any CI log; a gate's noise dimmed."""
    console.print(Text("gates", style="bold"))
    for line in report.lines():
        if line.status == "note":
            console.print(Text(f"  {'':<13}{one_line(line.text)}", style="dim"))
            continue
        text = Text("  ")
        text.append(f"{line.status.upper():<13}", style=STATUS_STYLE[line.status])
        text.append(one_line(line.text))
        console.print(text)
    console.print(Text(f"result: {report.verdict} (exit {report.exit_code})", style="bold"))


def gate_command(args: argparse.Namespace) -> int:
    suite = load_suite(Path(args.suite)).spec
    return check_gates(project_run(args.run), suite, junit=args.junit, console=report_console(stderr=args.json),
                       suite_path=args.suite)


def compare_command(args: argparse.Namespace) -> int:
    base, cand = _summary_of(args.base), _summary_of(args.candidate)
    replay = _replays(cand, project_run(args.base))
    if replay and not args.allow_different_pins:
        print(f"note: {one_line(args.candidate)} replays the users of {one_line(args.base)}: its simulator pin "
              "differs by design, so the pins are not compared", file=sys.stderr)
    result = compare(base, cand, allow_different_pins=args.allow_different_pins or replay, margin=args.margin)
    code, why = compare_exit(result, base, cand, fail_on_regression=args.fail_on_regression)
    if args.json:
        print(result.to_json())
        return code
    console = report_console()
    table = Table(title=Text(f"{one_line(args.base)} → {one_line(args.candidate)} (valid trials)"),
                  title_justify="left")
    for column in ("scenario", "base", "candidate", "Δ success [95% CI]", "verdict"):
        table.add_column(column, justify="right" if column != "scenario" else "left")
    for row in result.scenarios:
        table.add_row(Text(one_line(row.scenario) + (" (flipped)" if row.flipped else "")),
                      f"{row.base.c}/{row.base.n}", f"{row.candidate.c}/{row.candidate.n}", _interval(row), row.verdict)
    pooled = result.pooled
    table.add_section()
    table.add_row("pooled", f"{pooled.base.c}/{pooled.base.n}", f"{pooled.candidate.c}/{pooled.candidate.n}",
                  _interval(pooled), pooled.verdict)
    console.print(table)
    paired = result.paired
    p = paired.sign_test_p
    console.print(f"paired over {len(result.scenarios)} shared scenarios: {len(paired.improved)} improved, "
                  f"{len(paired.regressed)} regressed, {len(paired.unchanged)} unchanged"
                  + (f" (sign test p = {p:.2f})" if p is not None else ""))
    for name, items in (("only in base", result.only_in_base), ("only in candidate", result.only_in_candidate)):
        if items:
            console.print(Text(f"{name}: {', '.join(one_line(i) for i in items)}"))
    for line in result.pins_differ:
        console.print(Text(f"warning: pins differ: {one_line(line)}", style="yellow"))
    for warning in result.warnings:
        console.print(Text(f"warning: {one_line(warning)}", style="yellow"))
    for line in mode_change_lines(result):  # failure modes new, grown, shrunk, fixed (report/why.py)
        console.print(Text(f"failure mode {line}"))
    _print_first_differences(args, console)
    console.print(Text(f"verdict: {pooled.verdict}", style="bold"))
    console.print(Text(f"result: {why} (exit {code})"))
    return code


def _replays(candidate: RunSummary, base: Path) -> bool:
    """Whether the candidate run is a ``run --replay`` of the base run."""
    simulator = candidate.pins.get("simulator") or {}
    if not isinstance(simulator, dict) or simulator.get("kind") != "replay":
        return False
    try:
        return Path(str(simulator.get("run"))).resolve() == base.resolve()
    except OSError:
        return False


def _print_first_differences(args: argparse.Namespace, console: Console, shown: int = 20) -> None:
    """Per trial in both runs: the turn and step where the two first differ (``report/first_difference``)."""
    from simlab.report.first_difference import trial_differences

    found = trial_differences(project_run(args.base), project_run(args.candidate))
    differing = [(unit, diff) for unit, diff in found if diff is not None]
    if not found:
        return
    console.print(Text(f"per trial: {len(differing)} of {len(found)} shared trials differ"))
    for unit, diff in differing[:shown]:
        if diff is not None:
            console.print(Text(f"  {one_line(unit)}: first differs at turn {diff.turn}, step {diff.step}: "
                               f"{one_line(diff.how)}"))
    if len(differing) > shown:
        console.print(Text(f"  … and {len(differing) - shown} more"))


def _interval(row: ScenarioChange | PooledChange) -> str:
    return change(row.difference, row.low, row.high)
