"""``simlab calibrate LABELS.yaml``: measure a judge against human labels (agreement, kappa): rubric
labels (``items:``) and the fault types of failure modes (``triage:``), each reported on its own."""

from __future__ import annotations

import argparse

from simlab.cli.argtypes import positive


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "labels",
        help="LABELS.yaml: transcripts, criteria, human yes/no labels; or triage: "
        "failure modes' trials and their fault types",
    )
    parser.add_argument("--judge", help="judge model (default: simlab.yaml's judge)")
    parser.add_argument("--samples", type=positive, default=1, help="judge samples per item (majority vote)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from simlab.errors import UsageError
    from simlab.graders.calibrate import calibrate, format_report, load_labels
    from simlab.graders.calibrate_triage import calibrate_triage, format_triage_report, load_triage_labels
    from simlab.runner.factory import build_judge
    from simlab.specs import load_config

    items = load_labels(Path(args.labels))  # spec errors first, before any model is touched
    triage = load_triage_labels(Path(args.labels))
    judge = build_judge(args.judge or load_config(Path("simlab.yaml")).judge)
    if judge is None:
        raise UsageError("calibrate needs a judge model: pass --judge MODEL or set 'judge' in simlab.yaml")
    reports = []
    if items:
        reports.append(format_report(asyncio.run(calibrate(items, judge, samples=args.samples))))
    if triage:
        reports.append(format_triage_report(asyncio.run(calibrate_triage(triage, judge))))
    print("\n\n".join(reports))
    return 0
