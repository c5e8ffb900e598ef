"""A rate-limit storm does not become a retry storm: jittered back-off, a cap on calls in flight per
model, and a requests-per-minute limit that retries obey too."""

from __future__ import annotations

import asyncio
import bisect

from simlab.cli.main import main
from simlab.llm import LiteLLMModel, ModelLimiter, register_fake
from simlab.llm import limits as limits_mod
from simlab.llm.fakes import unregister_fake
from simlab.llm.faults import Fault, FaultPlan, FaultyModel
from tests.fixtures.hostile.helpers import agent_reply, read_lines, write_llm_project

STORM = {Fault.RATE_LIMIT: 0.4, Fault.RATE_LIMIT_RETRY_AFTER: 0.2}


def storm_run(tmp_path, monkeypatch, name: str, extra: str) -> FaultyModel:
    faulty = FaultyModel(agent_reply, FaultPlan(STORM, seed=21, max_consecutive=3, retry_after_s=1))
    model = faulty.register(name)
    try:
        write_llm_project(tmp_path, agent=model, scenarios=2, trials=12, concurrency=12,
                          extra=extra.replace("MODEL", model))
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "s", "--no-progress"]) == 0
    finally:
        unregister_fake(name)
    records = read_lines(tmp_path / "transcripts/s/trials.jsonl")
    assert len(records) == 24 and {r["transcript"]["termination"]["reason"] for r in records} == {"goal_reached"}
    return faulty


def test_calls_in_flight_per_model_stay_under_the_cap(tmp_path, monkeypatch, llm_sleeps):
    faulty = storm_run(tmp_path, monkeypatch, "storm-capped", "model_concurrency: {MODEL: 2}\n")
    assert faulty.log.injected[Fault.RATE_LIMIT] > 10
    assert faulty.log.peak == 2


def test_without_a_cap_the_storm_runs_wide(tmp_path, monkeypatch, llm_sleeps):
    faulty = storm_run(tmp_path, monkeypatch, "storm-open", "")
    assert faulty.log.peak > 2  # the control: the cap above is what held it


def test_back_off_is_jittered(tmp_path, monkeypatch, llm_sleeps):
    storm_run(tmp_path, monkeypatch, "storm-jitter", "")
    jittered = [w for w in llm_sleeps if w != 1.0]  # 1.0 s is the Retry-After the provider asked for
    assert len(jittered) > 10
    assert len(set(jittered)) == len(jittered)  # no two trials wake up together
    assert all(0.0 <= w <= 0.5 * 2**2 for w in jittered)  # within the exponential ceiling (3 retries at most)


async def test_requests_per_minute_bound_every_attempt_retries_included(llm_sleeps):
    clock = {"t": 0.0}

    async def sleep(seconds: float) -> None:
        clock["t"] += seconds
        await asyncio.sleep(0)

    rpm = 30
    limiter = ModelLimiter({"simlab-fake/rpm": 4}, rpm={"simlab-fake/rpm": rpm}, clock=lambda: clock["t"], sleep=sleep)
    faulty = FaultyModel(lambda m, t: "ok", FaultPlan({Fault.RATE_LIMIT: 0.5}, seed=4, max_consecutive=3))
    stamps: list[float] = []

    async def timed(messages, tools, seed=None):
        stamps.append(clock["t"])
        return await faulty(messages, tools, seed=seed)

    model = LiteLLMModel(register_fake("rpm", timed), role="agent", limiter=limiter)
    try:
        results = await asyncio.gather(*(model.chat([{"role": "user", "content": f"q{i}"}], seed=i)
                                         for i in range(60)))
    finally:
        unregister_fake("rpm")
    retries = sum(r.usage.retries for r in results)
    assert retries == faulty.log.injected[Fault.RATE_LIMIT] > 10
    assert len(stamps) == 60 + retries
    stamps.sort()
    for t in stamps:  # a token bucket: a minute's burst, then rpm per minute, whatever fails
        assert bisect.bisect_right(stamps, t) <= rpm + rpm * t / 60 + 1e-6
    assert stamps[-1] >= (len(stamps) - rpm) * 60 / rpm - 1e-6
    assert limiter.peak["simlab-fake/rpm"] <= 4


def test_requests_per_minute_is_configurable_per_model(tmp_path, monkeypatch):
    built: list[dict] = []

    class Recording(ModelLimiter):
        def __init__(self, *args, **kwargs):
            built.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(limits_mod, "ModelLimiter", Recording)
    faulty = FaultyModel(agent_reply, FaultPlan({}))
    model = faulty.register("rpm-config")
    try:
        write_llm_project(tmp_path, agent=model, scenarios=1, trials=1, extra=f"model_rpm: {{{model}: 30}}\n")
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    finally:
        unregister_fake("rpm-config")
    assert built and built[0].get("rpm") == {model: 30}
