"""``simlab compare BASE CANDIDATE``: tell a regression from noise, per scenario and pooled.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what comparing needs is
imported where it is used."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_json
from simlab.cli.gate_cmd import summary_of
from simlab.inert import one_line

if TYPE_CHECKING:
    from rich.console import Console

    from simlab.results.figures import PooledChange, ScenarioChange


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="baseline run id or folder")
    parser.add_argument("candidate", help="candidate run id or folder")
    parser.add_argument(
        "--allow-different-pins",
        action="store_true",
        help="compare even if simulator, judge or scenario files differ",
    )
    parser.add_argument(
        "--margin", type=float, default=0.0, help="tolerated drop in points (0.05 = 5 points)"
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when the pooled success regressed beyond noise (and --margin), 3 when a "
        "run is incomplete or the candidate did not play some of the base's scenarios; without it "
        "only 'no data' (exit 3) changes the exit code",
    )
    parser.add_argument(
        "--partial-ok",
        action="store_true",
        help="with --fail-on-regression: accept a candidate that played a part of the base's scenarios "
        "(the ones it did not play are named, not compared) instead of exiting 3; a candidate played "
        "with simlab run --partial-ok is accepted so already",
    )
    add_json(parser, "print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from simlab.report.build import project_run
    from simlab.report.compare_runs import compare, compare_exit, part_accepted, replays
    from simlab.report.terminal import report_console, say
    from simlab.report.why import mode_change_lines

    base, cand = summary_of(args.base), summary_of(args.candidate)
    replay = replays(cand, project_run(args.base))
    if replay:
        print(
            f"note: {one_line(args.candidate)} replays the users of {one_line(args.base)}: its simulator pin "
            "differs by design and is not compared (the judge and the scenario files still are)",
            file=sys.stderr,
        )
    by_design = ("simulator",) if replay else ()
    result = compare(
        base, cand, allow_different_pins=args.allow_different_pins, margin=args.margin, by_design=by_design
    )
    code, why = compare_exit(
        result, base, cand, fail_on_regression=args.fail_on_regression, partial_ok=args.partial_ok
    )
    if args.json:
        print(result.to_json())
        return code
    console = report_console()
    table = Table(
        title=Text(f"{one_line(args.base)} → {one_line(args.candidate)} (valid trials)"), title_justify="left"
    )
    for column in ("scenario", "base", "candidate", "Δ success [95% CI]", "verdict"):
        table.add_column(column, justify="right" if column != "scenario" else "left")
    for row in result.scenarios:
        table.add_row(
            Text(one_line(row.scenario) + (" (flipped)" if row.flipped else "")),
            f"{row.base.c}/{row.base.n}",
            f"{row.candidate.c}/{row.candidate.n}",
            _interval(row),
            row.verdict,
        )
    pooled = result.pooled
    table.add_section()
    table.add_row(
        "pooled",
        f"{pooled.base.c}/{pooled.base.n}",
        f"{pooled.candidate.c}/{pooled.candidate.n}",
        _interval(pooled),
        pooled.verdict,
    )
    console.print(table)
    paired = result.paired
    p = paired.sign_test_p
    say(
        console,
        f"paired over {len(result.scenarios)} shared scenarios: {len(paired.improved)} improved, "
        f"{len(paired.regressed)} regressed, {len(paired.unchanged)} unchanged"
        + (f" (sign test p = {p:.2f})" if p is not None else ""),
    )
    if result.only_in_candidate:  # only in base: a warning below (compare_runs.base_only_phrase)
        names = ", ".join(one_line(i) for i in result.only_in_candidate)
        say(console, f"only in candidate (new, cannot regress): {names}")
    for line in result.pins_differ:
        say(console, f"warning: pins differ: {one_line(line)}", "yellow")
    for warning in result.warnings:
        say(console, f"warning: {one_line(warning)}", "yellow")
    if result.only_in_base and part_accepted(cand, args.partial_ok):
        say(console, "the scenarios only the base has were not compared: accepted with --partial-ok")
    for line in mode_change_lines(result):  # failure modes new, grown, shrunk, fixed (report/why.py)
        say(console, f"failure mode {line}")
    _print_first_differences(args, console)
    console.print(Text(f"verdict: {pooled.verdict}", style="bold"))
    say(console, f"result: {why} (exit {code})")
    return code


def _print_first_differences(args: argparse.Namespace, console: Console, shown: int = 20) -> None:
    """Per trial in both runs: the turn and step where the two first differ (``report/first_difference``)."""
    from rich.text import Text

    from simlab.report.build import project_run
    from simlab.report.first_difference import trial_differences
    from simlab.report.terminal import say
    from simlab.report.wrap import phrase_lines

    found = trial_differences(project_run(args.base), project_run(args.candidate))
    differing = [(unit, diff) for unit, diff in found if diff is not None]
    if not found:
        return
    say(console, f"per trial: {len(differing)} of {len(found)} shared trials differ")
    for unit, diff in differing[:shown]:
        if diff is not None:
            head = f"  {one_line(unit)}: first differs at turn {diff.turn}, step {diff.step}: "
            room = min(len(head), max(0, console.width - 20))  # a very long unit id: say() breaks it
            first, *rest = phrase_lines(one_line(diff.how), console.width, first=room, indent=4)
            say(console, head + first)  # the unit and its step stay on one line with what differs
            for line in rest:
                say(console, line, indent=4)
    if len(differing) > shown:
        console.print(Text(f"  … and {len(differing) - shown} more"))


def _interval(row: ScenarioChange | PooledChange) -> str:
    from simlab.report.fmt import change

    return change(row.difference, row.low, row.high)
