"""How the runner hands finished trials to the disk: in groups, without holding a trial's slot,
and never losing one that ended (a failed write stops the run; an interruption writes the rest)."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from simlab.errors import InfraError
from simlab.runner.execute import PLAY_GC_THRESHOLDS, execute
from simlab.runner.prepare import RunRequest, prepare
from simlab.sim.agents import PythonAgent
from simlab.sim.simulators import RulesSimulator
from tests.support import kv_agent, write_project


class Recording:
    """An appender that keeps each group it is given; ``gate`` holds the first write back."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False):
        self.groups: list[list[bytes]] = []
        self.gate, self.fail = gate, fail

    def append_lines(self, lines: list[bytes]) -> None:
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail:
            raise InfraError("trials.jsonl: cannot write trial (No space left on device); the run stopped")
        self.groups.append(list(lines))

    @property
    def units(self) -> list[str]:
        return [json.loads(line)["unit_id"] for group in self.groups for line in group]


def plan_of(tmp_path: Path, trials: int = 4, concurrency: int = 12) -> Any:
    write_project(tmp_path, trials=trials)
    return prepare(RunRequest(root=tmp_path, concurrency=concurrency, run_id="w", command=["test"]))


def play(plan: Any, appender: Any, **kwargs: Any) -> Any:
    agent = PythonAgent(kv_agent, "tests.support:kv_agent")
    return execute(plan, plan.units, agent, RulesSimulator(), appender, **kwargs)


def release_when_queued(monkeypatch: pytest.MonkeyPatch, gate: threading.Event, count: int) -> list[str]:
    """Set ``gate`` once ``count`` trials have ended and been queued for the disk (each queued
    record is encoded once): the held-back first write then has company, by construction."""
    import simlab.runner.execute as ex

    real, queued = ex.encode_record, []

    def encode(record: Any) -> bytes:
        queued.append(record.unit_id)
        if len(queued) == count:
            gate.set()
        return real(record)

    monkeypatch.setattr(ex, "encode_record", encode)
    return queued


def test_trials_that_end_while_a_write_is_under_way_go_to_disk_together(tmp_path: Path, monkeypatch) -> None:
    plan = plan_of(tmp_path)
    gate = threading.Event()
    appender = Recording(gate)
    seen: list[str] = []
    release_when_queued(monkeypatch, gate, len(plan.units))  # the first write waits until every trial ended

    outcome = asyncio.run(play(plan, appender, on_trial=lambda r: seen.append(r.unit_id)))
    assert outcome.finished == 12 and sorted(appender.units) == sorted(u.unit_id for u in plan.units)
    assert len(appender.groups) < 12 and max(len(g) for g in appender.groups) > 1  # grouped
    assert seen == appender.units  # each trial is reported once it is on disk, in file order


def test_a_failed_write_stops_the_run_with_its_error(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, trials=20, concurrency=2)
    appender = Recording(fail=True)
    with pytest.raises(InfraError, match="No space left on device"):
        asyncio.run(play(plan, appender))
    assert appender.groups == []


def test_an_interrupted_run_writes_every_trial_that_ended(tmp_path: Path, monkeypatch) -> None:
    import simlab.runner.execute as ex

    plan = plan_of(tmp_path, trials=20, concurrency=6)
    gate, queued_enough = threading.Event(), threading.Event()
    appender = Recording(gate)
    seen: list[str] = []
    queued = release_when_queued(monkeypatch, queued_enough, 12)  # trials that ended, behind the first write
    real_close_now = ex._Writes.close_now

    def close_now(self: Any) -> None:  # Ctrl-C arrives while the first write is still under way
        gate.set()
        real_close_now(self)

    monkeypatch.setattr(ex._Writes, "close_now", close_now)

    async def main() -> None:
        run = asyncio.ensure_future(play(plan, appender, on_trial=lambda r: seen.append(r.unit_id)))
        while not queued_enough.is_set():
            await asyncio.sleep(0)
        run.cancel()  # Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert len(appender.units) == len(set(appender.units)) >= 12  # every trial that ended, none twice
    assert set(queued) <= set(appender.units) and seen == appender.units


def test_the_collector_is_set_back_after_playing(tmp_path: Path) -> None:
    before = gc.get_threshold()
    during: list[tuple[int, ...]] = []
    plan = plan_of(tmp_path, trials=1)
    asyncio.run(play(plan, Recording(), on_trial=lambda r: during.append(gc.get_threshold())))
    assert set(during) == {PLAY_GC_THRESHOLDS} and gc.get_threshold() == before


def test_trials_waiting_to_be_graded_at_an_interruption_are_graded_and_written() -> None:
    from simlab.runner.execute import _Grading, _Writes
    from simlab.transcript import TrialRecord
    from tests.sample_runs import sample_record

    appender, reported = Recording(), []

    async def graded(trial: str, transcript: Any) -> TrialRecord:
        return TrialRecord(unit_id=trial, transcript=transcript, verdict="pass")

    async def main() -> None:
        writes = _Writes(appender, lambda r: reported.append(r.unit_id))
        grading = _Grading(graded, writes, limit=100)
        for i in range(5):  # queued; the grading task has not run yet
            await grading.put(f"s#{i}", sample_record("r", "s", i).transcript)
        grading.close_now()  # as on Ctrl-C
        writes.close_now()

    asyncio.run(main())
    assert appender.units == reported == [f"s#{i}" for i in range(5)]


def test_a_bug_after_grading_stops_the_run_with_its_error_and_never_hangs(tmp_path: Path, monkeypatch) -> None:
    import simlab.runner.execute as ex
    from tests.support import slow_kv_agent

    real, calls = ex.encode_record, [0]

    def encode_once_badly(record: Any) -> bytes:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("a bug while encoding one record")
        return real(record)

    monkeypatch.setattr(ex, "encode_record", encode_once_badly)
    plan = plan_of(tmp_path, trials=6, concurrency=4)
    agent = PythonAgent(slow_kv_agent, "tests.support:slow_kv_agent")
    appender = Recording()

    async def main() -> None:
        await asyncio.wait_for(execute(plan, plan.units, agent, RulesSimulator(), appender), timeout=30)

    with pytest.raises(RuntimeError, match="a bug while encoding one record"):
        asyncio.run(main())
    assert len(appender.units) == len(set(appender.units)) >= 1  # what was played since is still written


def test_a_progress_callback_that_raises_stops_the_run_but_every_written_trial_is_counted(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, trials=4, concurrency=3)
    appender, seen = Recording(), []

    def on_trial(record: Any) -> None:
        seen.append(record.unit_id)
        if len(seen) == 2:
            raise ValueError("the progress bar broke")

    with pytest.raises(ValueError, match="the progress bar broke"):
        asyncio.run(play(plan, appender, on_trial=on_trial))
    assert seen == appender.units and len(seen) >= 2


def test_close_now_stops_at_a_grading_bug_and_leaves_what_it_graded_to_the_writer() -> None:
    from simlab.runner.execute import _Grading, _Writes
    from simlab.transcript import TrialRecord
    from tests.sample_runs import sample_record

    appender = Recording()

    async def graded(trial: str, transcript: Any) -> TrialRecord:
        if trial == "s#3":
            raise RuntimeError("grading bug")
        return TrialRecord(unit_id=trial, transcript=transcript, verdict="pass")

    async def main() -> None:
        writes = _Writes(appender, lambda r: None)
        grading = _Grading(graded, writes, limit=100)
        writes.add(await graded("s#0", sample_record("r", "s", 0).transcript))
        for i in range(1, 5):
            await grading.put(f"s#{i}", sample_record("r", "s", i).transcript)
        try:
            grading.close_now()
        finally:
            writes.close_now()

    with pytest.raises(RuntimeError, match="grading bug"):
        asyncio.run(main())
    assert appender.units == ["s#0", "s#1", "s#2"]
