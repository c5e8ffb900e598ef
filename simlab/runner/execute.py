"""Run the planned units: bounded concurrency, resume, append each finished trial at once.

A permanent provider error (authentication, unknown model, bad request) stops the whole run:
no trial is blamed for it and none is recorded, so a resume after fixing it runs them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from simlab.env.domain import Domain
from simlab.errors import InfraError
from simlab.graders.base import GradeContext
from simlab.graders.grade import grade, graders_of
from simlab.llm.types import ChatModel, ModelError
from simlab.runner.plan import WorkUnit
from simlab.runner.prepare import RunPlan
from simlab.runner.store import encode_record
from simlab.sim.agent_io import Agent
from simlab.sim.loop import Trial, run_trial, trial_transcript
from simlab.sim.simulators import Simulator
from simlab.specs import GraderUse, LoadedScenario
from simlab.transcript import ErrorEvent, Termination, TerminationReason, Transcript, TrialRecord


@dataclass
class RunOutcome:
    finished: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    stopped_by: str | None = None


OnTrial = Callable[[TrialRecord], None]


class Appender(Protocol):
    """Where finished trials go: ``store.Appender`` (one process) or ``workers.LockedAppender``."""

    def append_lines(self, lines: list[bytes]) -> None: ...


class _Writes:
    """Appends finished trials without making their slots wait for the disk.

    A record is encoded on the event loop (a writer thread would only wait for the GIL to do it),
    and one writer thread flushes every line waiting at that moment with one write and one fsync
    (a group commit): when hundreds of trials end together, none of them waits behind hundreds
    of fsyncs. ``done(record)`` runs on the loop once its record is on disk. A failed write is
    kept in ``error`` and nothing more is written; the run then stops.
    """

    MAX_WAITING = 4096  # lines; past this a slow disk holds the trials back instead of memory

    def __init__(self, appender: Appender, done: Callable[[TrialRecord], None]):
        self._appender, self._done = appender, done
        self._waiting: list[tuple[bytes, TrialRecord]] = []
        self._writing: tuple[Future[None], list[TrialRecord]] | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="simlab-writer")
        self.error: BaseException | None = None  # the disk's: nothing more is written
        self.report_error: BaseException | None = None
        self._closed = False

    def add(self, record: TrialRecord) -> None:
        """Queue a record for the next flush (``close_now`` writes it when the run is stopping)."""
        self._waiting.append((encode_record(record), record))

    async def put(self, record: TrialRecord) -> None:
        self.add(record)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        elif len(self._waiting) >= self.MAX_WAITING:
            await asyncio.shield(self._flusher)

    async def _flush(self) -> None:
        try:
            while self._waiting and self.error is None:
                batch, self._waiting = self._waiting, []
                future = self._pool.submit(self._appender.append_lines, [line for line, _ in batch])
                self._writing = (future, [record for _, record in batch])
                try:
                    await asyncio.wrap_future(future)
                except Exception as exc:  # the disk's error stops the run
                    self.error = exc
                    return
                finally:
                    self._writing = None
                if self._closed:  # close_now has reported this batch already
                    return
                self._report([record for _, record in batch])
        finally:
            self._flusher = None

    async def close(self) -> None:
        """Every finished trial on disk (or the write error kept)."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)
        self._pool.shutdown(wait=True)

    def close_now(self) -> None:
        """On interruption: finish the write under way and write what waits, synchronously, so a
        trial that ended is never lost."""
        self._closed = True
        writing, self._writing = self._writing, None
        self._pool.shutdown(wait=True)
        if writing is not None and writing[0].done() and writing[0].exception() is None:
            self._report(writing[1])
        waiting, self._waiting = self._waiting, []
        if waiting and self.error is None and (writing is None or writing[0].exception() is None):
            self._appender.append_lines([line for line, _ in waiting])
            self._report([record for _, record in waiting])

    def _report(self, records: list[TrialRecord]) -> None:
        """``done`` for each record on disk. One that raises (a bug in a progress callback) is
        kept in ``report_error``, which stops the run; the others are still counted, and what
        waits is still written."""
        for record in records:
            try:
                self._done(record)
            except Exception as exc:
                self.report_error = self.report_error or exc


class _Grading:
    """Grades played trials (no judge: pure CPU) one at a time, yielding to the event loop after
    each, so the trials in flight take their steps first; hands each record to ``writes``.
    A played trial is queued at once (never lost to an interruption); once ``limit`` wait, the
    trial that queued the last one waits for room before its slot plays on."""

    def __init__(self, graded: Callable[..., Awaitable[TrialRecord | None]], writes: _Writes, limit: int):
        self._graded, self._writes, self._limit = graded, writes, max(1, limit)
        self._waiting: deque[tuple[Any, Transcript]] = deque()
        self._more, self._room, self._drained = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._room.set()
        self._drained.set()
        self.error: BaseException | None = None
        self._task = asyncio.create_task(self._run())

    async def put(self, trial: Any, transcript: Transcript) -> None:
        self._waiting.append((trial, transcript))
        if self.error is not None:  # the grading task is gone: the trial waits for close_now
            return
        self._more.set()
        self._drained.clear()
        if len(self._waiting) >= self._limit:
            self._room.clear()
            await self._room.wait()

    async def _run(self) -> None:
        try:
            await self._grade_all()
        except Exception as exc:  # a bug in the lab: stop the run with it, never hang
            self.error = exc
            self._room.set()  # what waits is left to close_now, which tries once more
            self._drained.set()

    async def _grade_all(self) -> None:
        while True:
            if not self._waiting:
                self._drained.set()
                self._more.clear()
                await self._more.wait()
                continue
            trial, transcript = self._waiting[0]
            record = await self._graded(trial, transcript)  # without a judge this never waits
            self._waiting.popleft()
            if len(self._waiting) < self._limit:
                self._room.set()
            if record is not None:
                await self._writes.put(record)
            await asyncio.sleep(0)  # the steps of the trials in flight go before the next grading

    async def close(self) -> None:
        """Every queued trial graded and handed to ``writes`` (or the grading task's error kept)."""
        while self.error is None and not self._drained.is_set():
            await self._drained.wait()
        self._task.cancel()

    def close_now(self) -> None:
        """On interruption: grade what waits here and now (grading without a judge never waits)."""
        self._task.cancel()
        while self._waiting:
            trial, transcript = self._waiting.popleft()
            record = _at_once(self._graded(trial, transcript))
            if record is not None:
                self._writes.add(record)


def _at_once(coro: Any) -> Any:
    """The result of a coroutine that never waits (driven without an event loop)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("grading waited during shutdown")  # a judge call: never deferred


Stop = Callable[[], "str | None"]

# While trials play, the cyclic GC runs rarely: Python's default (a young collection every 700
# allocations, a full one every 100 young ones) collected about 500 times a run of 1,024 trials
# at 256 in flight, pausing every trial for up to 100 ms at a time, and used a tenth of the CPU.
# Trials make almost no cycles (the conversation's own one is broken when it ends), so little
# garbage waits for these (bench/bench_latency.py).
PLAY_GC_THRESHOLDS = (50_000, 20, 100)


class _Playing:
    runs = 0  # runs playing in this process
    saved: tuple[int, int, int] = (0, 0, 0)  # the thresholds to restore after the last


@contextmanager
def _quiet_gc() -> Iterator[None]:
    if _Playing.runs == 0:
        _Playing.saved = gc.get_threshold()
        gc.set_threshold(*PLAY_GC_THRESHOLDS)
    _Playing.runs += 1
    try:
        yield
    finally:
        _Playing.runs -= 1
        if _Playing.runs == 0:
            gc.set_threshold(*_Playing.saved)


async def execute(
    plan: RunPlan,
    units: Iterable[WorkUnit],
    agent: Agent,
    simulator: Simulator,
    appender: Appender,
    on_trial: OnTrial | None = None,
    judge: ChatModel | None = None,
    stop: Stop | None = None,
) -> RunOutcome:
    """Play ``units`` with at most ``plan.concurrency`` trials at once; grade each and append it as
    it ends. ``stop`` (asked before each new trial) returns a reason to start no more. ``units`` may
    be a list or an iterator that hands them out as they are taken (``runner/workers.py``).

    Without a judge, grading is pure CPU: a trial's slot starts its next trial as soon as the
    conversation ends, and one grading task grades the finished ones in between the steps of
    the trials in flight, so that hundreds of trials ending together never hold up the others.
    With a judge, or a user's async grader (it may wait), each trial is graded in its slot."""
    play = _Play(plan, units, agent, simulator, appender, on_trial, judge, stop)
    return await play.run(len(units) if isinstance(units, Sized) else plan.concurrency)


class _Play:
    """One ``execute``: the units left, the run's budget, and what stops it."""

    def __init__(
        self,
        plan: RunPlan,
        units: Iterable[WorkUnit],
        agent: Agent,
        simulator: Simulator,
        appender: Appender,
        on_trial: OnTrial | None,
        judge: ChatModel | None,
        stop: Stop | None,
    ):
        self.plan, self.agent, self.simulator, self.judge = plan, agent, simulator, judge
        self.on_trial, self.stop = on_trial, stop
        self.outcome = RunOutcome()
        self.queue: Iterator[WorkUnit] = iter(units)  # shared: each unit is taken by exactly one slot
        self.states = {
            sid: plan.domains[sid].build_state(s.spec.initial_state) for sid, s in plan.scenarios.items()
        }
        self.limits = {sid: _limits(plan, s.spec.limits) for sid, s in plan.scenarios.items()}
        self.failure: list[ModelError] = []
        self.memos: dict[str, dict[str, Any]] = {}  # per scenario: what grading its trials shares
        self.spent = 0.0  # known cost so far; unknown costs cannot be counted against the run budget
        self.writes = _Writes(appender, self.on_disk)
        waits = judge is not None or any(
            graders_of(s.spec, self.memos.setdefault(sid, {}), plan.graders).may_wait
            for sid, s in plan.scenarios.items()
        )
        self.later = None if waits else _Grading(self.graded, self.writes, plan.concurrency)

    def on_disk(self, record: TrialRecord) -> None:
        self.outcome.finished += 1
        reason = record.transcript.termination.reason.value
        self.outcome.reasons[reason] = self.outcome.reasons.get(reason, 0) + 1
        if self.on_trial:
            self.on_trial(record)

    def count_cost(self, transcript: Transcript) -> None:
        budget = self.plan.max_run_cost_usd
        self.spent += transcript.known_cost_usd()
        if budget is not None and self.spent >= budget and not self.outcome.stopped_by:
            self.outcome.stopped_by = (
                f"the run budget of ${budget:g} is spent (${self.spent:.4f}); no new trial was started"
            )

    def attempted(self, record: TrialRecord) -> TrialRecord:
        """The record with the unit's earlier attempts (errors played again on resume) noted."""
        earlier = self.plan.earlier_attempts.get(record.unit_id)
        if earlier:
            record.attempt, record.earlier_attempts = len(earlier) + 1, list(earlier)
        return record

    async def graded(self, trial: Trial, transcript: Transcript) -> TrialRecord | None:
        """The record of a played trial; None when the judge's provider failed for good."""
        plan = self.plan
        try:
            memo = self.memos.setdefault(trial.scenario.id, {})
            loaded = plan.scenarios[trial.scenario.id]
            return self.attempted(
                await grade_record(transcript, loaded, trial.domain, self.judge, memo, plan.graders)
            )
        except ModelError as exc:
            self.failure.append(exc)
            return None
        except Exception as exc:  # a bug in the lab: record it against this trial, keep going
            return self.attempted(
                TrialRecord(unit_id=trial.unit_id, transcript=_crashed(trial, exc), verdict="error")
            )

    def halted(self) -> bool:
        """Whether to start no new trial: a provider failed, a write failed, or the run stops."""
        later, writes = self.later, self.writes
        if self.failure or self.outcome.stopped_by or writes.error or writes.report_error:
            return True
        if later is not None and later.error:
            return True
        if self.stop is not None and (why := self.stop()):
            self.outcome.stopped_by = why
            return True
        return False

    def trial_of(self, unit: WorkUnit) -> Trial:
        loaded = self.plan.scenarios[unit.scenario_id]
        return Trial(
            run_id=self.plan.run_id,
            unit_id=unit.unit_id,
            trial=unit.trial,
            seed=unit.seed,
            scenario=loaded.spec,
            persona=loaded.persona,
            domain=self.plan.domains[unit.scenario_id],
            initial_state=self.states[unit.scenario_id],
            agent=self.agent,
            simulator=self.simulator,
            limits=self.limits[unit.scenario_id],
        )

    async def slot(self) -> None:
        """One of ``concurrency`` slots: plays units one after another until none is left or the
        run halts."""
        for unit in self.queue:
            if self.halted():
                return
            trial = self.trial_of(unit)
            try:
                transcript = await run_trial(trial)
            except ModelError as exc:
                self.failure.append(exc)
                return
            except Exception as exc:  # a bug in the lab: record it against this trial, keep going
                transcript = _crashed(trial, exc)
                self.count_cost(transcript)
                record = TrialRecord(unit_id=unit.unit_id, transcript=transcript, verdict="error")
                await self.writes.put(self.attempted(record))
                continue
            if self.later is not None:
                self.count_cost(transcript)
                await self.later.put(trial, transcript)
                continue
            graded = await self.graded(trial, transcript)
            if graded is None:
                return
            self.count_cost(graded.transcript)  # with the judge's calls
            await self.writes.put(graded)

    async def run(self, planned: int) -> RunOutcome:
        later, writes, plan = self.later, self.writes, self.plan
        services = _agent_services(self.agent) if planned else contextlib.nullcontext()
        slots: list[asyncio.Task[None]] = []
        try:
            async with services:  # issue 15: e.g. an HTTP agent's tool server, up while its trials play
                count = max(1, min(plan.concurrency, planned))
                slots = [asyncio.create_task(self.slot()) for _ in range(count)]
                with _quiet_gc():
                    await asyncio.gather(*slots)
                    if later is not None:
                        await later.close()
                    await writes.close()
        finally:
            for task in slots:
                task.cancel()
            try:
                if later is not None:
                    later.close_now()  # after an interruption: every trial that ended is graded and written
            finally:
                writes.close_now()
        for error in (writes.error, later.error if later else None, writes.report_error):
            if error is not None:
                raise error
        if self.failure:
            exc = self.failure[0]
            self.outcome.stopped_by = exc.describe()
            raise InfraError(
                f"run stopped: {exc.describe()}. No trial was recorded for this; fix it and run the same "
                f"command with --run-id {plan.run_id} to resume."
            )
        return self.outcome


async def grade_record(
    transcript: Transcript,
    loaded: LoadedScenario,
    domain: Domain,
    judge: ChatModel | None,
    memo: dict[str, Any] | None = None,
    extra: Sequence[GraderUse] = (),
) -> TrialRecord:
    """Grade a finished transcript; judge calls join its events (their usage is the judge's).
    ``memo`` is shared by the trials of one scenario (see ``GradeContext.memo``); ``extra``: the
    graders the suite adds."""
    ctx = GradeContext(
        transcript,
        loaded.spec,
        domain,
        judge=judge,
        persona=loaded.persona,
        memo=memo if memo is not None else {},
    )
    graded = await grade(ctx, extra=extra)
    transcript.events.extend(graded.judge_calls)
    return TrialRecord(
        unit_id=transcript.unit_id, transcript=transcript, checks=graded.checks, verdict=graded.verdict
    )


def _agent_services(agent: Agent) -> contextlib.AbstractAsyncContextManager[Any]:
    """What an agent needs while its trials play (``agent.lifespan()``: an HTTP agent's tool
    server), or nothing. Issue 15: the one hook the runner has for agents that run elsewhere."""
    lifespan = getattr(agent, "lifespan", None)
    return lifespan() if callable(lifespan) else contextlib.nullcontext()


def _limits(plan: RunPlan, scenario_limits):  # type: ignore[no-untyped-def]
    """Scenario limits win where set; the run's fill the gaps."""
    merged = plan.limits.model_dump()
    merged.update({k: v for k, v in scenario_limits.model_dump(exclude_unset=True).items() if v is not None})
    return type(plan.limits).model_validate(merged)


def _crashed(trial: Trial, exc: Exception) -> Transcript:
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return trial_transcript(
        trial,
        events=[ErrorEvent(turn=0, source="lab", kind="crash", message=detail)],
        termination=Termination(reason=TerminationReason.ERROR, detail=f"simlab crashed: {detail}"),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        duration_s=None,  # not measured: unknown
    )


__all__ = ["RunOutcome", "execute"]
