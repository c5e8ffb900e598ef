"""``simlab gate``: decide a nightly build by a suite's gates (also what ``simlab run --suite`` ends
with). Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what a gate needs is
imported where it is used."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_json, add_run
from simlab.inert import one_line

if TYPE_CHECKING:
    from rich.console import Console

    from simlab.report.gates import GateReport
    from simlab.results.figures import RunSummary
    from simlab.specs import Suite


def configure(parser: argparse.ArgumentParser) -> None:
    add_run(parser)
    parser.add_argument("--suite", required=True, help="the suite file whose gates to check")
    parser.add_argument("--junit", help="write a JUnit XML file (one testcase per scenario)")
    add_json(parser, argparse.SUPPRESS)


STATUS_STYLE = {"pass": "green", "fail": "bold red", "inconclusive": "yellow"}


def summary_of(target: str, allow_unjudged: list[str] | None = None) -> RunSummary:
    """The summary of a run (a gate's baseline, a side of a comparison), written nowhere; with
    ``allow_unjudged`` (a suite's, as its gated run is read) in place of the run's own list."""
    from simlab.report.build import build, project_run

    return build(project_run(target), write=False, allow_unjudged=allow_unjudged)


def check_gates(
    folder: Path,
    suite: Suite,
    *,
    junit: str | None,
    console: Console,
    suite_path: str | Path | None = None,
    warn: bool = False,
) -> int:
    """Evaluate the suite's gates on a finished run; print, write JUnit, return the exit code. Only
    the suite's own ``allow_unjudged`` lets unjudged trials count as passes here. The run must be
    the suite's plan: read from ``suite_path``, or as the run recorded it when it was played from
    this suite (``simlab run --suite``). ``warn``: first print what the run's report warns of (a
    copied folder, a unit stored twice, a torn last line), which ``simlab gate`` alone would
    otherwise never show (``run --suite`` has just printed its report)."""
    from rich.text import Text

    from simlab.report.build import build
    from simlab.report.digest import digest
    from simlab.report.gates import gate_run
    from simlab.report.junit import junit_xml
    from simlab.report.step_summary import write_step_summary

    summary = build(  # the suite's view of the run: summary.json keeps the run's own (simlab report)
        folder,
        write=False,
        allow_unjudged=list(suite.allow_unjudged or []),
        summary_evaluators=list(suite.summary_evaluators),
    )
    if warn:
        from simlab.report.terminal import print_warnings

        print_warnings(summary, console)
    allowed: list[str] = list(suite.allow_unjudged or [])
    report = gate_run(
        folder,
        summary,
        suite,
        suite_path=suite_path,
        load_baseline=lambda ref: summary_of(ref, allowed),  # read as the gated run is
    )
    print_gates(report, console)
    write_step_summary(summary, report, suite.id)
    if junit:
        trials = digest(folder, allow_unjudged=summary.unjudged.allowed_kinds)
        Path(junit).write_text(junit_xml(summary, report, suite.id, trials), encoding="utf-8")
        console.print(Text(f"junit: {one_line(junit)}"))
    return report.exit_code


def print_gates(report: GateReport, console: Console) -> None:
    """``GateReport.lines`` as plain lines, readable in any CI log; a gate's noise dimmed."""
    from rich.text import Text

    from simlab.report.wrap import phrase_lines

    console.print(Text("gates", style="bold"))
    for line in report.lines():  # a long line goes on under its text, broken between phrases
        first, *rest = phrase_lines(one_line(line.text), console.width, first=15, indent=15)
        text = Text("  ")
        text.append(
            f"{'' if line.status == 'note' else line.status.upper():<13}",
            style=STATUS_STYLE.get(line.status, ""),
        )
        text.append(first, style="dim" if line.status == "note" else "")
        for more in rest:
            text.append("\n" + more, style="dim" if line.status == "note" else "")
        console.print(text, no_wrap=True, overflow="ignore", crop=False)
    console.print(Text(f"result: {report.verdict} (exit {report.exit_code})", style="bold"))


def run(args: argparse.Namespace) -> int:
    from simlab.report.build import project_run
    from simlab.report.terminal import report_console
    from simlab.specs import load_suite

    suite = load_suite(Path(args.suite)).spec
    return check_gates(
        project_run(args.run),
        suite,
        junit=args.junit,
        console=report_console(stderr=args.json),
        suite_path=args.suite,
        warn=True,
    )
