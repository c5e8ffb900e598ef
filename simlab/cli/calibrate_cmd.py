"""``simlab calibrate LABELS.yaml``: measure a judge against human labels (agreement, kappa)."""

from __future__ import annotations

import argparse

from simlab.cli.argtypes import positive


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labels", help="LABELS.yaml: transcripts, criteria, human yes/no labels")
    parser.add_argument("--judge", help="judge model (default: simlab.yaml's judge)")
    parser.add_argument("--samples", type=positive, default=1, help="judge samples per item (majority vote)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from simlab.errors import UsageError
    from simlab.graders.calibrate import calibrate, format_report, load_labels
    from simlab.runner.factory import build_judge
    from simlab.specs import load_config

    items = load_labels(Path(args.labels))  # spec errors first, before any model is touched
    judge = build_judge(args.judge or load_config(Path("simlab.yaml")).judge)
    if judge is None:
        raise UsageError("calibrate needs a judge model: pass --judge MODEL or set 'judge' in simlab.yaml")
    print(format_report(asyncio.run(calibrate(items, judge, samples=args.samples))))
    return 0
