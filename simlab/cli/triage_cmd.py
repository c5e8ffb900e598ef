"""``simlab triage``: a written cause per failure mode, asked of a judge model (``report/triage.py``).
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what the work needs is
imported in ``run``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_json, add_max_attempts, add_run, positive

if TYPE_CHECKING:
    from simlab.transcript.causes import Triage

DESCRIPTION = (
    "Ask a judge model, once per failure mode, for its fault type and a one-sentence cause, given "
    "the mode's first trial and simlab's own evidence (blame, first faulty step, failing checks). "
    "Writes triage.json into the run's folder; `simlab report` then shows each cause. Without "
    "--judge, shows the causes already written. Exit 0; 3 when a mode stays undecided."
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_run(parser)
    parser.add_argument(
        "--judge",
        metavar="MODEL",
        help="the judge model to ask (one call per failure mode, more for malformed answers), "
        "read as `simlab run --judge` reads it; without it, nothing is asked",
    )
    parser.add_argument(
        "--top", type=positive, default=None, metavar="N", help="triage only the N most costly modes"
    )
    add_max_attempts(parser, "judge calls per mode")
    add_json(parser, "print triage.json on stdout instead of the table")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys
    from pathlib import Path

    from simlab.errors import EXIT_INFRA, UsageError
    from simlab.inert import one_line
    from simlab.report.build import build, project_run
    from simlab.report.triage import TRIAGE_FILE, read_triage, triage_run

    folder = project_run(args.run)
    if args.judge is None:
        triage = read_triage(folder)
        if triage is None:
            raise UsageError(
                f"run {folder.name} has no {TRIAGE_FILE} yet: ask a judge with `simlab triage "
                f"{folder.name} --judge MODEL` (one judge call per failure mode)"
            )
    else:
        from simlab.runner.factory import build_judge
        from simlab.runner.prepare import judge_flag
        from simlab.specs import load_config

        summary = build(folder, write=False)
        modes = summary.failure_modes[: args.top]
        if not modes:
            print(f"no trial of run {one_line(summary.run_id)} failed: nothing to triage", file=sys.stderr)
            return 0
        spec, notes = judge_flag(args.judge, load_config(Path("simlab.yaml")).judge)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        judge = build_judge(spec)
        assert judge is not None  # a model was named
        run_id = summary.run_id or folder.name
        triage = asyncio.run(triage_run(folder, judge, modes, run_id=run_id, max_attempts=args.max_attempts))
        print(f"wrote {folder / TRIAGE_FILE}", file=sys.stderr)
    _show(triage, args.json)
    undecided = [c for c in triage.causes if c.fault_type is None]
    if undecided:
        print(
            f"inconclusive (exit 3): {len(undecided)} of {len(triage.causes)} failure modes undecided "
            "(the judge gave no usable answer); ask again, or with another judge",
            file=sys.stderr,
        )
        return EXIT_INFRA
    return 0


def _show(triage: Triage, as_json: bool) -> None:
    import sys

    from rich.table import Table
    from rich.text import Text

    from simlab.report import why
    from simlab.report.terminal import report_console

    if as_json:
        sys.stdout.write(triage.model_dump_json(indent=2) + "\n")
        return
    console = report_console()
    from simlab.inert import one_line

    # a Text title: a run id from triage.json is never read as markup
    title = Text(f"triage of {one_line(triage.run_id)}")
    table = Table(title=title, title_justify="left", show_edge=False)
    for name in why.TRIAGE_HEADER:
        table.add_column(name, justify="right" if name == "trials" else "left", no_wrap=name == "fault type")
    for row in why.triage_rows(triage):
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    console.print(Text(why.triage_cost(triage), style="dim"))
