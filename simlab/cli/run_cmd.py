"""``simlab run``: prepare, lock, resume, play, summarise."""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

from simlab.cli.progress import Progress
from rich.console import Console

from simlab.report.build import build
from simlab.report.terminal import print_report
from simlab.errors import UsageError
from simlab.errors import EXIT_INFRA as EXIT_INCOMPLETE
from simlab.runner.execute import RunOutcome, execute
from simlab.runner.factory import build_agent, build_judge, build_simulator
from simlab.runner.prepare import RunPlan, RunRequest, pin_differences, prepare
from simlab.runner.store import RunStore

EXIT_INTERRUPTED = 130


def run_command(args: argparse.Namespace) -> int:
    req = RunRequest(
        root=Path("."), paths=args.paths, suite=args.suite, agent=args.agent, simulator=args.simulator,
        judge=args.judge, trials=args.trials, concurrency=args.concurrency, run_id=args.run_id, seed=args.seed,
        allow_same_family=args.allow_same_family, command=["simlab", *sys.argv[1:]],
    )
    plan = prepare(req)
    limiter = None
    if plan.agent.model or plan.simulator.kind == "llm" or plan.judge:
        from simlab.llm.limits import ModelLimiter

        limiter = ModelLimiter(plan.model_concurrency)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = build_agent(plan.agent, limiter=limiter, max_retries=plan.max_retries,
                            timeout_s=plan.call_timeout_s)
        simulator = build_simulator(plan.simulator, plan.agent, limiter=limiter,
                                    max_retries=plan.max_retries, timeout_s=plan.call_timeout_s)
        judge = build_judge(plan.judge, limiter=limiter, max_retries=plan.max_retries,
                            timeout_s=plan.call_timeout_s)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)

    store = RunStore(plan.folder)
    store.lock()
    try:
        _write_or_check_manifest(store, plan, force=args.force)
        repair = store.repair_torn_tail()
        if repair.cut_bytes:
            print(f"note: cut a torn last line ({repair.cut_bytes} bytes: {repair.reason}) from "
                  f"{store.trials_path}", file=sys.stderr)
        done = store.finished_units()
        todo = [u for u in plan.units if u.unit_id not in done]
        skipped = len(plan.units) - len(todo)
        print(f"run {plan.run_id}: {len(plan.scenarios)} scenarios, {len(plan.units)} trials"
              + (f" ({skipped} already done, resuming)" if skipped else "")
              + f"; agent {plan.agent.ref}, simulator {plan.simulator.ref}", file=sys.stderr)
        appender = store.open_appender()
        progress = Progress(total=len(plan.units), done=skipped, enabled=not args.no_progress)
        interrupted = False
        outcome = RunOutcome()
        try:
            with progress:
                outcome = asyncio.run(execute(plan, todo, agent, simulator, appender, on_trial=progress.advance,
                                              judge=judge))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            appender.close()
        summary, _, _ = build(plan.folder)
        print_report(summary, Console())
        print(f"transcripts: {store.trials_path}", file=sys.stderr)
        if outcome.stopped_by:
            print(f"stopped early: {outcome.stopped_by}", file=sys.stderr)
        if interrupted:
            left = len(plan.units) - len(store.finished_units())
            print(f"interrupted: finished trials are saved; {left} left. Resume with: "
                  f"simlab run --run-id {plan.run_id} (same arguments)", file=sys.stderr)
            return EXIT_INTERRUPTED
        if args.suite:
            from simlab.cli.gate_cmd import check_gates
            from simlab.specs import load_suite

            return check_gates(plan.folder, load_suite(Path(args.suite)).spec, junit=args.junit,
                               console=Console())
        return EXIT_INCOMPLETE if outcome.stopped_by else 0
    finally:
        store.unlock()


def _write_or_check_manifest(store: RunStore, plan: RunPlan, force: bool) -> None:
    stored = store.read_manifest()
    if stored is None:
        store.write_manifest(plan.manifest)
        return
    diffs = pin_differences(stored.get("pins", {}), plan.manifest["pins"])
    if diffs and not force:
        lines = "\n".join(f"  - {d}" for d in diffs[:20])
        raise UsageError(
            f"run {plan.run_id} exists with different pins; resuming would mix configurations:\n{lines}\n"
            "Use another --run-id, or --force to resume anyway."
        )
    resumes = stored.setdefault("resumes", [])
    resumes.append({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": plan.manifest["command"],
                    **({"forced_over": diffs} if diffs else {})})
    if diffs:
        stored["pins"] = plan.manifest["pins"]
    store.write_manifest(stored)
