"""A run's whole lifecycle, for the CLI and the public API alike: prepare the plan, lock the run,
write or check its manifest (pins, ``--force``), repair a torn tail, set aside trials that ended in
an infrastructure error (they are played again), resume, and play (one process or worker
processes). The caller, one layer up (the CLI, the public API), reads the run's figures
(``report.build``), decides the gates (``report.gates``), what to print and which exit code it
means.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from simlab.errors import UsageError
from simlab.redact import mask_tree
from simlab.runner.execute import RunOutcome, execute
from simlab.runner.factory import build_agent, build_judge, build_simulator
from simlab.runner.plan import WorkUnit, remaining
from simlab.runner.prepare import RunPlan, RunRequest, pin_differences, prepare
from simlab.runner.shard import shard_units
from simlab.runner.store import RunStore
from simlab.transcript import TrialRecord

if TYPE_CHECKING:
    from simlab.llm.limits import ModelLimiter
    from simlab.llm.types import ChatModel

__all__ = ["BatchOptions", "BatchResult", "ProgressSink", "run_batch"]


class ProgressSink(Protocol):
    """Where finished trials are counted as they land (the CLI's bar; nothing, for the API)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...

    def advance(self, record: TrialRecord) -> None: ...

    def tick(self, label: str) -> None: ...


class _Quiet:
    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def advance(self, record: TrialRecord) -> None:
        return None

    def tick(self, label: str) -> None:
        return None


@dataclass
class BatchOptions:
    """How to play a planned run, beyond what it is (``RunRequest``)."""

    force: bool = False  # resume even where the stored pins differ (the run is then marked mixed)
    keep_errors: bool = (
        False  # keep trials that ended in an infrastructure error instead of playing them again
    )
    workers: int | str = 1  # processes, or "auto" (runner/workers.auto_workers: by cores and concurrency)
    shard: tuple[int, int] = (1, 1)  # play only share I of N
    note: Callable[[str], None] = lambda text: None  # what the caller shows of notes and warnings
    progress: Callable[[int, int], ProgressSink] | None = None  # (total, already done) → a progress sink
    # objects played as they are instead of what the plan's specs build (the public API's in-process
    # agent and simulator; forked workers inherit them): the agent's pin must name the plan's agent
    # (identity.py checks every trial against it); the simulator's own pin is what the run pins
    agent: Any = None
    simulator: Any = None


@dataclass
class BatchResult:
    """What a batch did: its plan, and what played."""

    plan: RunPlan
    store: RunStore
    units: list[WorkUnit]  # this shard's planned units
    skipped: int  # units already finished before this batch
    outcome: RunOutcome
    interrupted: bool

    @property
    def left(self) -> int:
        """Units of this shard not finished yet."""
        return len(remaining(self.units, self.store.finished_unit_ids()))


def run_batch(req: RunRequest, options: BatchOptions | None = None) -> BatchResult:
    """Plan, play and summarise one run (see the module docstring). Raises ``SimlabError`` for
    what the user must fix (exit 2 or 3 in the CLI); an interruption (Ctrl-C) returns with
    ``interrupted`` set and every finished trial on disk."""
    options = options or BatchOptions()
    plan = prepare(req)
    for note in plan.notes:
        options.note(f"note: {note}")
    if options.simulator is not None:
        plan.manifest["pins"]["simulator"] = mask_tree(options.simulator.pin().model_dump(mode="json"))
    limiter, agent, simulator, judge = build_models(
        plan, options.note, agent=options.agent, simulator=options.simulator
    )
    if limiter is not None:
        _divide_limits(plan, limiter, options.shard, options.note)
    units = shard_units(plan.units, *options.shard)
    store = RunStore(plan.folder)
    store.lock()
    try:
        write_or_check_manifest(store, plan, force=options.force)
        repair = store.repair_torn_tail()
        if repair.cut_bytes:
            options.note(
                f"note: cut a torn last line ({repair.cut_bytes} bytes: {repair.reason}) from "
                f"{store.trials_path}"
            )
        errors = store.error_unit_ids()  # reads every head: each line checked against run.json (identity.py)
        if not options.keep_errors:
            again = errors & {u.unit_id for u in units}
            if again:  # an infrastructure error is not finished work: play those units again
                moved = store.retire(again)
                options.note(
                    f"note: {moved} trials that ended in an infrastructure error will be played again "
                    f"(their lines are kept in {store.retired_path.name}; --keep-errors keeps them as "
                    "they are)"
                )
        plan.earlier_attempts = store.earlier_attempts()
        todo = remaining(units, store.finished_unit_ids())
        skipped = len(units) - len(todo)
        shard = options.shard
        scope = f" (shard {shard[0]}/{shard[1]}: {len(units)} of them)" if shard[1] > 1 else ""
        workers = _workers(options.workers, plan.concurrency, len(todo))
        workers = _within_caps(workers, limiter, options.note)
        parallel = workers > 1 and len(todo) > 1
        auto = " (auto)" if options.workers == "auto" else ""
        options.note(
            f"run {plan.run_id}: {len(plan.scenarios)} scenarios, {len(plan.units)} trials{scope}"
            + (f" ({skipped} already done, resuming)" if skipped else "")
            + f"; agent {plan.agent.ref}, simulator {_simulator_ref(plan, options)}"
            + (f"; {workers} workers{auto}" if parallel else (f"; 1 worker{auto}" if auto else ""))
        )
        progress = options.progress(len(units), skipped) if options.progress else _Quiet()
        if parallel:
            outcome, interrupted = _play_in_workers(
                plan, todo, workers, progress, agent=agent, simulator=simulator, judge=judge, limiter=limiter
            )
        else:
            outcome, interrupted = _play(
                plan, todo, progress, store, agent=agent, simulator=simulator, judge=judge, limiter=limiter
            )
        return BatchResult(plan, store, units, skipped, outcome, interrupted)
    finally:
        store.unlock()


def _simulator_ref(plan: RunPlan, options: BatchOptions) -> str:
    return plan.simulator.ref if options.simulator is None else str(options.simulator.pin().ref)


def _divide_limits(
    plan: RunPlan, limiter: ModelLimiter, shard: tuple[int, int], note: Callable[[str], None]
) -> None:
    """Keep this shard's part of the run's model limits (``model_limits_scope: run``, the default)."""
    index, count = shard
    if count == 1 or plan.model_limits_scope != "run":
        return
    tight = limiter.smallest_cap()
    if tight is not None and tight[1] < count:
        note(
            f"note: model_concurrency of {tight[0]} is {tight[1]} for the whole run, cut into {count} "
            "shards: "
            f"each shard keeps 1 slot, so together they may hold {count} (fewer shards keep the cap)"
        )
    limiter.divide(count, index - 1)


def _within_caps(workers: int, limiter: ModelLimiter | None, note: Callable[[str], None]) -> int:
    """No more worker processes than the tightest model_concurrency: each process holds at least
    one slot of every cap, so more of them would exceed it together."""
    tight = limiter.smallest_cap() if limiter is not None else None
    if tight is None or workers <= tight[1]:
        return workers
    note(
        f"note: {tight[1]} workers, not {workers}: model_concurrency of {tight[0]} is {tight[1]} "
        "and every worker process holds at least one slot"
    )
    return tight[1]


def _workers(asked: int | str, concurrency: int, units: int) -> int:
    if asked == "auto":
        from simlab.runner.workers import auto_workers

        return auto_workers(concurrency, units)
    return int(asked)


def build_models(
    plan: RunPlan,
    note: Callable[[str], None] = lambda text: None,
    *,
    agent: Any = None,
    simulator: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """(limiter, agent, simulator, judge); pin warnings go to ``note`` once, here. An ``agent`` or
    ``simulator`` object given is kept as it is (the plan's spec for it is not built)."""
    limiter = None
    if (
        (agent is None and plan.agent.model)
        or (simulator is None and plan.simulator.kind == "llm")
        or plan.judge
    ):
        from simlab.llm.limits import ModelLimiter

        limiter = ModelLimiter(plan.model_concurrency, rpm=plan.model_rpm)
    cache = None
    if plan.cache_dir is not None:
        from simlab.llm.cache import ResponseCache

        cache = ResponseCache(plan.cache_dir, max_mb=plan.cache_max_mb)
    how: dict[str, Any] = {
        "limiter": limiter,
        "max_retries": plan.max_retries,
        "timeout_s": plan.call_timeout_s,
        "cache": cache,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if agent is None:
            agent = build_agent(plan.agent, **how)
        judge = build_judge(plan.judge, **how)
        if simulator is None:
            simulator = build_simulator(plan.simulator, plan.agent, judge=judge, root=plan.root, **how)
    for warning in caught:
        note(f"warning: {warning.message}")
    return limiter, agent, simulator, judge


def _play(
    plan: RunPlan,
    todo: list[WorkUnit],
    progress: ProgressSink,
    store: RunStore,
    *,
    agent: Any,
    simulator: Any,
    judge: ChatModel | None,
    limiter: ModelLimiter | None,
) -> tuple[RunOutcome, bool]:
    """One process: (outcome, interrupted)."""
    appender = store.open_appender()
    _freeze_setup(todo, limiter)
    try:
        with progress:
            return asyncio.run(
                execute(plan, todo, agent, simulator, appender, on_trial=progress.advance, judge=judge)
            ), False
    except KeyboardInterrupt:
        return RunOutcome(), True
    finally:
        gc.unfreeze()
        appender.close()


def _freeze_setup(todo: list[WorkUnit], limiter: ModelLimiter | None) -> None:
    """Exempt what is alive before playing (imports, specs, LiteLLM's tables, imported now rather
    than at the first call) from the cyclic GC, which would otherwise walk it again at every full
    collection: about a tenth of the CPU of a run through LiteLLM."""
    if todo:
        _import_litellm_now(limiter)
    gc.freeze()


def _import_litellm_now(limiter: ModelLimiter | None) -> None:
    """When models are in play, import LiteLLM before playing (forked workers then inherit it)."""
    if limiter is not None:
        from simlab.llm.lazy import load_litellm

        load_litellm()


def _play_in_workers(
    plan: RunPlan,
    todo: list[WorkUnit],
    workers: int,
    progress: ProgressSink,
    *,
    agent: Any,
    simulator: Any,
    judge: ChatModel | None,
    limiter: ModelLimiter | None,
) -> tuple[RunOutcome, bool]:
    """``workers`` forked processes; LiteLLM is imported first so that each inherits it."""
    from simlab.runner.workers import WorkerPool

    _import_litellm_now(limiter)
    pool = WorkerPool(plan, todo, workers, agent=agent, simulator=simulator, judge=judge, limiter=limiter)
    pool.start()  # before the progress bar starts its thread: fork a process with one thread
    with progress:
        outcome = pool.wait(on_result=progress.tick)
    return outcome, pool.interrupted


def _comparable(stored: dict[str, Any], plan: RunPlan) -> dict[str, Any]:
    """The pins a stored manifest is compared with: a run made before code was pinned
    (``code_pins.py``) is compared without ``pins.code``, which the resume then adds."""
    pins = plan.manifest["pins"]
    if isinstance(stored.get("pins"), dict) and "code" not in stored["pins"]:
        stored["pins"]["code"] = pins.get("code")
        stored["code_pinned_at_resume"] = True  # the trials played before it: their code is unknown
    return pins


def write_or_check_manifest(store: RunStore, plan: RunPlan, force: bool) -> None:
    """A new run gets its manifest; a resumed one must have the same pins (or ``force``, which marks
    it as mixing configurations). A run with trials but no manifest is refused without ``force``."""
    stored = store.read_manifest()
    missing = stored is None and store.has_trials()  # the pins its trials were played with are unknown
    if stored is None and not missing:
        store.write_manifest(plan.manifest)
        return
    if stored is None:
        diffs = [
            f"run.json was missing: the pins of the trials stored before are unknown ({store.trials_path})"
        ]
        stored = dict(plan.manifest)
    else:
        diffs = pin_differences(stored.get("pins", {}), _comparable(stored, plan))
    if diffs and not force:
        lines = "\n".join(f"  - {d}" for d in diffs[:20])
        what = "has trials but no run.json" if missing else "exists with different pins"
        raise UsageError(
            f"run {plan.run_id} {what}; resuming would mix configurations:\n{lines}\n"
            "Use another --run-id, or --force to resume anyway (the run is then marked as mixing "
            "configurations)."
        )
    stored["allow_unjudged"] = plan.manifest.get(
        "allow_unjudged", []
    )  # the latest command's reporting setting
    for key in ("suite", "partial_ok"):  # the suite this command gates against, and whether a part may pass
        stored.pop(key, None)
        if key in plan.manifest:
            stored[key] = plan.manifest[key]
    # likewise the suite's summary functions, and the error budget every report holds the run to
    for key in ("summary_evaluators", "max_error_rate"):
        stored.pop(key, None)
        if key in plan.manifest:  # manifest_for writes each only when set
            stored[key] = plan.manifest[key]
    if stored.get("run_id") != plan.run_id:  # a run folder copied or renamed, resumed under its name:
        named = stored.setdefault("run_ids", [])  # the trials it adds name it (runner/identity.py)
        if plan.run_id not in named:
            named.append(plan.run_id)
    resumes = stored.setdefault("resumes", [])
    resumes.append(
        {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": plan.manifest["command"],
            **({"forced_over": diffs} if diffs else {}),
        }
    )
    if diffs:
        stored["pins"], stored["units"] = plan.manifest["pins"], plan.manifest["units"]
    store.write_manifest(stored)
