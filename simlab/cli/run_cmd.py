"""``simlab run``: the command line of ``runner.batch.run_batch``: parse, play, print, exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from simlab.cli.progress import Progress
from simlab.errors import EXIT_INFRA as EXIT_INCOMPLETE
from simlab.report.build import build
from simlab.report.gates import RUN_MAX_ERROR_RATE, error_budget_problem
from simlab.report.terminal import print_report
from simlab.runner.batch import BatchOptions, run_batch
from simlab.runner.prepare import RunRequest
from simlab.runner.shard import parse_shard

EXIT_INTERRUPTED = 130


def run_command(args: argparse.Namespace) -> int:
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else (1, 1)
    req = RunRequest(
        root=Path("."), paths=args.paths, suite=args.suite, agent=args.agent, simulator=args.simulator,
        judge=args.judge, trials=args.trials, concurrency=args.concurrency, run_id=args.run_id, seed=args.seed,
        allow_same_family=args.allow_same_family, command=["simlab", *sys.argv[1:]],
    )
    options = BatchOptions(
        force=args.force, keep_errors=getattr(args, "keep_errors", False), workers=getattr(args, "workers", None) or 1,
        shard=shard, note=lambda text: print(text, file=sys.stderr),
        progress=lambda total, done: Progress(total=total, done=done, enabled=not args.no_progress),
    )
    result = run_batch(req, options)
    plan, outcome = result.plan, result.outcome
    summary = build(plan.folder)
    print_report(summary, Console())
    print(f"transcripts: {result.store.trials_path}", file=sys.stderr)
    if outcome.stopped_by:
        print(f"stopped early: {outcome.stopped_by}", file=sys.stderr)
    if result.interrupted:
        print(f"interrupted: finished trials are saved; {result.left} left. Resume with: "
              f"simlab run --run-id {plan.run_id} (same arguments)", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.suite and shard[1] > 1:  # one shard is not the run: gate it once the shards are merged
        print(f"shard {shard[0]}/{shard[1]} done; check the gates after merging the shards: "
              f"simlab gate {plan.run_id} --suite {args.suite}", file=sys.stderr)
        return EXIT_INCOMPLETE if outcome.stopped_by else 0
    if args.suite:
        from simlab.cli.gate_cmd import check_gates
        from simlab.specs import load_suite

        return check_gates(plan.folder, load_suite(Path(args.suite)).spec, junit=args.junit, console=Console())
    budget = RUN_MAX_ERROR_RATE if plan.max_error_rate is None else plan.max_error_rate
    problem = error_budget_problem(summary, budget)
    if problem:  # a run that mostly could not be played is no result: say so, and why
        print(f"incomplete: {problem}. Fix the cause and re-run the same command with --run-id "
              f"{plan.run_id}: trials that ended in an error are played again.", file=sys.stderr)
    return EXIT_INCOMPLETE if problem or outcome.stopped_by else 0
