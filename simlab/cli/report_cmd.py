"""``simlab report``: summarise a stored run. Imported to parse its arguments, ``--help`` too
(``cli/main.COMMANDS``): what reading a run needs is imported where it is used."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_json, add_run
from simlab.errors import EXIT_INFRA, EXIT_OK, UsageError
from simlab.inert import one_line

if TYPE_CHECKING:
    from simlab.report.coverage import Coverage
    from simlab.results.figures import RunSummary


def configure(parser: argparse.ArgumentParser) -> None:
    add_run(parser)
    parser.add_argument("--format", choices=["terminal", "markdown", "json", "csv"], default="terminal")
    add_json(parser, "print only the JSON summary on stdout")
    parser.add_argument("--out", help="write the report to this file instead of stdout")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (charts, failed transcripts; no network)",
    )
    parser.add_argument(
        "--view",
        choices=["raw", "valid"],
        default="raw",
        help="per-scenario figures over all trials (raw) or valid ones only",
    )
    parser.add_argument(
        "--checks-table",
        action="store_true",
        help="also write checks.parquet, one row per check (parses every transcript; "
        "kept up to date from then on)",
    )


def run(args: argparse.Namespace) -> int:
    from simlab.report.build import build, project_run
    from simlab.report.formats import render
    from simlab.report.step_summary import write_step_summary
    from simlab.report.terminal import print_report, report_console

    folder = project_run(args.run)
    summary = build(folder, checks_table=args.checks_table)
    fmt = "json" if args.json else args.format
    if fmt == "terminal":
        print_report(summary, report_console(), view=args.view)
    else:
        text = render(summary, fmt)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    if getattr(args, "html", None):
        write_html(folder, summary, Path(args.html))
    write_step_summary(summary)
    if fmt != "json":
        print(f"summary: {folder / 'summary.json'}", file=sys.stderr)
    return report_exit(folder, summary)


def report_exit(folder: Path, summary: RunSummary) -> int:
    """0, or 3 (INCONCLUSIVE) for a run that is not whole, whatever its figures: the report is
    written and says so on its first line, and the exit code says that it could not judge the run
    (``report/completeness.py``); stderr says why, and how to finish the run."""
    from simlab.report.completeness import summary_state
    from simlab.report.gates import over_budget
    from simlab.runner.store import RunStore

    state = summary_state(summary)
    if state.judged:
        problem = over_budget(summary, RunStore(folder).read_manifest())
        if problem is None:
            return EXIT_OK
        print(f"inconclusive (exit 3): {one_line(problem)}.", file=sys.stderr)  # as simlab run ended it
        return EXIT_INFRA
    from simlab.report.redo import redo_advice

    done = summary.completeness
    run = one_line(summary.run_id)
    what = (
        f"no trial of run {run} finished: there is nothing to judge"
        if not summary.trials + summary.ungraded
        else f"none of the {summary.ungraded} stored trials of run {run} is graded: there is nothing to judge"
        if not summary.trials
        else f"the figures stand for the {summary.trials} graded trials stored, not for run {run}"
        if summary.ungraded
        else f"the figures stand for the {summary.trials} trials played, not for run {run}"
    )
    print(f"inconclusive (exit 3): {one_line(state.line)}; {what}", file=sys.stderr)
    manifest = RunStore(folder).read_manifest()
    command = (manifest or {}).get("command")
    redo = redo_advice(manifest, errors=False)
    if redo is not None:  # imported or merged: no --run-id of its own finishes it
        print(f"{one_line(redo)}.", file=sys.stderr)
    elif done is not None and done.planned is not None and done.finished < done.planned and command:
        from simlab.cli.run_cmd import resume_command

        print(f"finish it with: {resume_command(command, folder.name)}", file=sys.stderr)
    return EXIT_INFRA


def _coverage(folder: Path) -> Coverage | str:
    """The run's coverage for the HTML report, or why it could not be computed (its scenario files
    gone, an imported run)."""
    from simlab.errors import SimlabError
    from simlab.report.coverage import run_coverage
    from simlab.specs import load_config

    try:
        return run_coverage(folder, Path(load_config(Path("simlab.yaml")).personas))
    except SimlabError as exc:
        return str(exc)


def write_html(folder: Path, summary: RunSummary, path: Path) -> None:
    """The HTML report of the run in ``folder`` (``report/html.py``), written atomically."""
    from simlab.report.digest import digest
    from simlab.report.html import html_report
    from simlab.runner.store import write_atomic

    if not path.parent.is_dir():
        raise UsageError(
            f"--html {path}: the folder {path.parent} does not exist; create it or name a file in a "
            "folder that does"
        )
    trials = digest(folder, allow_unjudged=summary.unjudged.allowed_kinds, records=True, heads=True)
    write_atomic(path, html_report(summary, trials, _coverage(folder)))
    print(f"html: {one_line(path)}", file=sys.stderr)
