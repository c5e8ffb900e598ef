"""ModelLimiter: per-model concurrency caps and requests-per-minute, without real waiting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from simlab.llm import LiteLLMModel, ModelLimiter, register_fake


async def test_cap_limits_concurrent_calls_per_model() -> None:
    limiter = ModelLimiter({"a": 2})
    active = {"now": 0, "peak": 0}
    gate = asyncio.Event()

    async def work(model: str) -> None:
        async with limiter.slot(model):
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
            await gate.wait()
            active["now"] -= 1

    tasks = [asyncio.create_task(work("a")) for _ in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert limiter.in_flight["a"] == 2
    gate.set()
    await asyncio.gather(*tasks)
    assert active["peak"] == 2 and limiter.peak["a"] == 2 and limiter.in_flight["a"] == 0


async def test_models_are_capped_independently_and_default_applies() -> None:
    limiter = ModelLimiter({"a": 1}, default=3)
    assert limiter.cap("a") == 1 and limiter.cap("b") == 3
    assert ModelLimiter().cap("anything") is None


async def test_cap_applies_through_litellm_model() -> None:
    state = {"now": 0, "peak": 0}

    async def fn(messages: Any, tools: Any) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return "ok"

    limiter = ModelLimiter({"simlab-fake/capped": 2})
    model = LiteLLMModel(register_fake("capped", fn), role="agent", limiter=limiter)
    results = await asyncio.gather(*(model.chat([{"role": "user", "content": "hi"}]) for _ in range(6)))
    assert all(r.text == "ok" for r in results)
    assert state["peak"] == 2 and limiter.peak["simlab-fake/capped"] == 2


async def test_requests_per_minute_with_injected_clock() -> None:
    clock = {"t": 0.0}
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock["t"] += seconds

    limiter = ModelLimiter(rpm={"m": 60}, clock=lambda: clock["t"], sleep=sleep)
    for _ in range(60):  # a full bucket: one minute's burst without waiting
        async with limiter.slot("m") as queued:
            assert queued == 0.0
    async with limiter.slot("m") as queued:
        assert queued == pytest.approx(1.0)  # one request per second once the burst is spent
    assert slept == [pytest.approx(1.0)]


def test_rejects_nonsense_caps() -> None:
    with pytest.raises(ValueError):
        ModelLimiter({"a": 0})
