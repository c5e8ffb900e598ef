"""``simlab merge OUT SHARD_DIR...``: the shards of a run played on several machines, as one run.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what merging needs is
imported in ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simlab.inert import one_line

DESCRIPTION = (
    "Check that the shards are parts of one run (same pins and plan, no torn or bad line, no unit "
    "twice) and write them as one run."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="run id (or folder) of the merged run; it must not exist yet")
    parser.add_argument(
        "shards", nargs="+", metavar="SHARD_DIR", help="run folders (or run ids) of the shards"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="merge shards whose pins (code included) differ; the merged run is marked mixed",
    )


def run(args: argparse.Namespace) -> int:
    from simlab.report.build import resolve_run
    from simlab.runner.merge import merge_shards
    from simlab.runner.prepare import check_run_id
    from simlab.specs import load_config

    transcripts = Path(load_config(Path("simlab.yaml")).transcripts)
    out = Path(args.out) if "/" in args.out else transcripts / check_run_id(args.out)
    shards = [resolve_run(target, transcripts) for target in args.shards]
    report = merge_shards(
        out, shards, ["simlab", "merge", args.out, *args.shards], force=getattr(args, "force", False)
    )
    if report.forced:
        report.warnings.insert(
            0,
            f"merged with --force over pins that differ ({report.forced[0]}"
            + (f" and {len(report.forced) - 1} more" if len(report.forced) > 1 else "")
            + "): the merged run mixes configurations, so its gates are inconclusive",
        )
    for warning in report.warnings:
        print(f"warning: {one_line(warning)}", file=sys.stderr)
    print(
        f"merged {report.merged} of {report.planned} planned trials from {len(report.shards)} shards into "
        f"{out}",
        file=sys.stderr,
    )
    for folder, count in report.shards:
        print(f"  {folder}: {count} trials", file=sys.stderr)
    if report.merged < report.planned:
        print(
            f"{report.planned - report.merged} planned trials are in no shard: the merged run is incomplete "
            "(a gate on it is inconclusive)",
            file=sys.stderr,
        )
    print(f"next: simlab report {args.out} && simlab gate {args.out} --suite SUITE", file=sys.stderr)
    return 0
