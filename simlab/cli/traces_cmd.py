"""``simlab grade-traces RUN --rules FILE``: reference-free checks on imported production traces."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = (
    "Apply a rules file's reference-free checks to the observed trials of an imported run and write "
    "the graded ones as a new run."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="an imported run (simlab import): run id or folder")
    parser.add_argument(
        "--rules",
        required=True,
        metavar="FILE",
        help="the rules file: expect: (the checks), sample: (rate, seed, flags), domain: (optional)",
    )
    parser.add_argument("--out", help="run id of the graded run (default: RUN-graded)")
    parser.add_argument(
        "--judge", help="judge model for rubric and groundedness (none: those checks are not run)"
    )
    parser.add_argument(
        "--rate", type=float, help="fraction of the unflagged traces to grade (over sample.rate)"
    )
    parser.add_argument("--seed", type=int, help="seed of the sample (over sample.seed)")


def run(args: argparse.Namespace) -> int:
    from simlab.errors import UsageError
    from simlab.report.build import resolve_run
    from simlab.runner.grade_traces import grade_traces, load_rules
    from simlab.runner.prepare import check_run_id
    from simlab.specs import load_config

    transcripts = Path(load_config(Path("simlab.yaml")).transcripts)
    source = resolve_run(args.run, transcripts)
    rules_path = Path(args.rules)
    loaded = load_rules(rules_path)
    rules = loaded.spec
    if args.rate is not None:
        if not 0 <= args.rate <= 1:
            raise UsageError(f"--rate {args.rate}: give a fraction from 0 to 1 (0.1 = 10 %)")
        rules.sample.rate = args.rate
    if args.seed is not None:
        rules.sample.seed = args.seed
    out = transcripts / check_run_id(args.out or f"{source.name}-graded")
    judge = judge_pin = None
    if args.judge:
        from simlab.runner.factory import build_judge
        from simlab.specs.config import JudgeSpec

        judge, judge_pin = build_judge(args.judge), JudgeSpec.model_validate({"model": args.judge}).pin()
    command = ["simlab", "grade-traces", args.run, "--rules", args.rules]
    for flag, value in (
        ("--out", args.out),
        ("--judge", args.judge),
        ("--rate", args.rate),
        ("--seed", args.seed),
    ):
        if value is not None:
            command += [flag, str(value)]
    report = grade_traces(source, out, loaded, judge=judge, judge_pin=judge_pin, command=command)
    graded = sum(report.verdicts.values())
    rate = rules.sample.rate
    print(
        f"graded {graded} of {report.population} traces: {len(report.flagged)} flagged "
        f"({_count_flags(report.flagged)}), {len(report.sampled)} drawn by the sample "
        f"({rate:.0%} of the rest, seed {rules.sample.seed}) → {out}",
        file=sys.stderr,
    )
    print(
        "verdicts: " + (", ".join(f"{v} {n}" for v, n in sorted(report.verdicts.items())) or "none"),
        file=sys.stderr,
    )
    if report.no_content:
        print(
            f"{len(report.no_content)} of {graded} traces carry no message content: unjudged, the checks "
            "that "
            "read text not run (simlab import says how to turn content capture on)",
            file=sys.stderr,
        )
    for line in report.violations[:20]:
        print(f"policy violation: {line}", file=sys.stderr)
    if len(report.violations) > 20:
        print(f"… and {len(report.violations) - 20} more (simlab view {out.name})", file=sys.stderr)
    print(f"next: simlab report {out.name}   (or: simlab view {out.name})", file=sys.stderr)
    return 0


def _count_flags(flagged: dict[str, list[str]]) -> str:
    counts: dict[str, int] = {}
    for flags in flagged.values():
        for flag in flags:
            counts[flag] = counts.get(flag, 0) + 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"
