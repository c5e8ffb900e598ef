"""``simlab run``: prepare, lock, resume, play (in one process or ``--workers N``), summarise."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

from simlab.cli.progress import Progress
from simlab.errors import EXIT_INFRA as EXIT_INCOMPLETE
from simlab.errors import UsageError
from simlab.report.build import build
from simlab.report.gates import RUN_MAX_ERROR_RATE, error_budget_problem
from simlab.report.terminal import print_report
from simlab.runner.execute import RunOutcome, execute
from simlab.runner.factory import build_agent, build_judge, build_simulator
from simlab.runner.plan import WorkUnit, remaining
from simlab.runner.prepare import RunPlan, RunRequest, pin_differences, prepare
from simlab.runner.shard import parse_shard, shard_units
from simlab.runner.store import RunStore

EXIT_INTERRUPTED = 130


def run_command(args: argparse.Namespace) -> int:
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else (1, 1)
    workers = getattr(args, "workers", None) or 1
    req = RunRequest(
        root=Path("."), paths=args.paths, suite=args.suite, agent=args.agent, simulator=args.simulator,
        judge=args.judge, trials=args.trials, concurrency=args.concurrency, run_id=args.run_id, seed=args.seed,
        allow_same_family=args.allow_same_family, command=["simlab", *sys.argv[1:]],
    )
    plan = prepare(req)
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    limiter, agent, simulator, judge = _build_models(plan)
    units = shard_units(plan.units, *shard)

    store = RunStore(plan.folder)
    store.lock()
    try:
        _write_or_check_manifest(store, plan, force=args.force)
        repair = store.repair_torn_tail()
        if repair.cut_bytes:
            print(f"note: cut a torn last line ({repair.cut_bytes} bytes: {repair.reason}) from "
                  f"{store.trials_path}", file=sys.stderr)
        if not getattr(args, "keep_errors", False):
            again = store.error_unit_ids() & {u.unit_id for u in units}
            if again:  # an infrastructure error is not finished work: play those units again
                moved = store.retire(again)
                print(f"note: {moved} trials that ended in an infrastructure error will be played again (their "
                      f"lines are kept in {store.retired_path.name}; --keep-errors keeps them as they are)",
                      file=sys.stderr)
        plan.earlier_attempts = store.earlier_attempts()
        todo = remaining(units, store.finished_unit_ids())
        skipped = len(units) - len(todo)
        scope = f" (shard {shard[0]}/{shard[1]}: {len(units)} of them)" if shard[1] > 1 else ""
        print(f"run {plan.run_id}: {len(plan.scenarios)} scenarios, {len(plan.units)} trials{scope}"
              + (f" ({skipped} already done, resuming)" if skipped else "")
              + f"; agent {plan.agent.ref}, simulator {plan.simulator.ref}"
              + (f"; {workers} workers" if workers > 1 and len(todo) > 1 else ""), file=sys.stderr)
        progress = Progress(total=len(units), done=skipped, enabled=not args.no_progress)
        if workers > 1 and len(todo) > 1:
            outcome, interrupted = _play_in_workers(plan, todo, workers, shard[1], progress,
                                                    agent=agent, simulator=simulator, judge=judge, limiter=limiter)
        else:
            outcome, interrupted = _play(plan, todo, progress, store, agent=agent, simulator=simulator, judge=judge,
                                         limiter=limiter)
        summary = build(plan.folder)
        print_report(summary, Console())
        print(f"transcripts: {store.trials_path}", file=sys.stderr)
        if outcome.stopped_by:
            print(f"stopped early: {outcome.stopped_by}", file=sys.stderr)
        if interrupted:
            left = len(remaining(units, store.finished_unit_ids()))
            print(f"interrupted: finished trials are saved; {left} left. Resume with: "
                  f"simlab run --run-id {plan.run_id} (same arguments)", file=sys.stderr)
            return EXIT_INTERRUPTED
        if args.suite and shard[1] > 1:  # one shard is not the run: gate it once the shards are merged
            print(f"shard {shard[0]}/{shard[1]} done; check the gates after merging the shards: "
                  f"simlab gate {plan.run_id} --suite {args.suite}", file=sys.stderr)
            return EXIT_INCOMPLETE if outcome.stopped_by else 0
        if args.suite:
            from simlab.cli.gate_cmd import check_gates
            from simlab.specs import load_suite

            return check_gates(plan.folder, load_suite(Path(args.suite)).spec, junit=args.junit,
                               console=Console())
        budget = RUN_MAX_ERROR_RATE if plan.max_error_rate is None else plan.max_error_rate
        problem = error_budget_problem(summary, budget)
        if problem:  # a run that mostly could not be played is no result: say so, and why
            print(f"incomplete: {problem}. Fix the cause and re-run the same command with --run-id "
                  f"{plan.run_id}: trials that ended in an error are played again.", file=sys.stderr)
            return EXIT_INCOMPLETE
        return EXIT_INCOMPLETE if outcome.stopped_by else 0
    finally:
        store.unlock()


def _build_models(plan: RunPlan) -> tuple[Any, Any, Any, Any]:
    """(limiter, agent, simulator, judge); pin warnings are printed once, here."""
    limiter = None
    if plan.agent.model or plan.simulator.kind == "llm" or plan.judge:
        from simlab.llm.limits import ModelLimiter

        limiter = ModelLimiter(plan.model_concurrency, rpm=plan.model_rpm)
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
    return limiter, agent, simulator, judge


def _play(plan: RunPlan, todo: list[WorkUnit], progress: Progress, store: RunStore, *, agent: Any,
          simulator: Any, judge: Any, limiter: Any) -> tuple[RunOutcome, bool]:
    """One process: (outcome, interrupted)."""
    appender = store.open_appender()
    _freeze_setup(todo, limiter)
    try:
        with progress:
            return asyncio.run(execute(plan, todo, agent, simulator, appender, on_trial=progress.advance,
                                       judge=judge)), False
    except KeyboardInterrupt:
        return RunOutcome(), True
    finally:
        gc.unfreeze()
        appender.close()


def _freeze_setup(todo: list[WorkUnit], limiter: Any) -> None:
    """Exempt what is alive before playing (imports, specs, LiteLLM's tables, imported now rather
    than at the first call) from the cyclic GC, which would otherwise walk it again at every full
    collection: about a tenth of the CPU of a run through LiteLLM."""
    if todo:
        _import_litellm_now(limiter)
    gc.freeze()


def _import_litellm_now(limiter: Any) -> None:
    """When models are in play, import LiteLLM before playing (forked workers then inherit it)."""
    if limiter is not None:
        from simlab.llm.lazy import load_litellm

        load_litellm()


def _play_in_workers(plan: RunPlan, todo: list[WorkUnit], workers: int, shards: int, progress: Progress, *,
                     agent: Any, simulator: Any, judge: Any, limiter: Any) -> tuple[RunOutcome, bool]:
    """``workers`` forked processes; LiteLLM is imported first so that each inherits it."""
    from simlab.runner.workers import WorkerPool

    _import_litellm_now(limiter)
    pool = WorkerPool(plan, todo, workers, agent=agent, simulator=simulator, judge=judge, limiter=limiter,
                      shards=shards)
    pool.start()  # before the progress bar starts its thread: fork a process with one thread
    with progress:
        outcome = pool.wait(on_result=progress.tick)
    return outcome, pool.interrupted


def _write_or_check_manifest(store: RunStore, plan: RunPlan, force: bool) -> None:
    stored = store.read_manifest()
    missing = stored is None and store.has_trials()  # the pins its trials were played with are unknown
    if stored is None and not missing:
        store.write_manifest(plan.manifest)
        return
    if stored is None:
        diffs = [f"run.json was missing: the pins of the trials stored before are unknown ({store.trials_path})"]
        stored = dict(plan.manifest)
    else:
        diffs = pin_differences(stored.get("pins", {}), plan.manifest["pins"])
    if diffs and not force:
        lines = "\n".join(f"  - {d}" for d in diffs[:20])
        what = "has trials but no run.json" if missing else "exists with different pins"
        raise UsageError(
            f"run {plan.run_id} {what}; resuming would mix configurations:\n{lines}\n"
            "Use another --run-id, or --force to resume anyway (the run is then marked as mixing configurations)."
        )
    stored["allow_unjudged"] = plan.manifest.get("allow_unjudged", [])  # the latest command's reporting setting
    resumes = stored.setdefault("resumes", [])
    resumes.append({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": plan.manifest["command"],
                    **({"forced_over": diffs} if diffs else {})})
    if diffs:
        stored["pins"], stored["units"] = plan.manifest["pins"], plan.manifest["units"]
    store.write_manifest(stored)
