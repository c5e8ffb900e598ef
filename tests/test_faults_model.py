"""The fault-injecting fake model itself: deterministic, faithful to its rates, and every fault
reaches simlab as the kind of error (or reply) a real provider would produce."""

from __future__ import annotations

import asyncio
import random

import pytest

from simlab.llm import LiteLLMModel, ModelError, ModelErrorKind
from simlab.llm.faults import MALFORMED, PERMANENT, TRANSIENT, Fault, FaultPlan, FaultyModel

HELLO = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "get_item", "parameters": {"type": "object"}}}]


def test_draws_depend_on_seed_request_and_attempt_only() -> None:
    plan = FaultPlan.spread(0.5, TRANSIENT, seed=1)
    keys = [f"req{i}" for i in range(200)]
    first = [plan.draw(k, 0) for k in keys]
    shuffled = keys[:]
    random.Random(0).shuffle(shuffled)
    again = dict(zip(shuffled, (plan.draw(k, 0) for k in shuffled)))
    assert first == [again[k] for k in keys]  # order of asking does not matter
    assert first != [FaultPlan.spread(0.5, TRANSIENT, seed=2).draw(k, 0) for k in keys]
    share = sum(f is not None for f in first) / len(first)
    assert 0.4 < share < 0.6


def test_transient_faults_stop_after_max_consecutive() -> None:
    plan = FaultPlan({Fault.RATE_LIMIT: 1.0, }, max_consecutive=2)
    assert [plan.draw("r", n) for n in range(4)] == [Fault.RATE_LIMIT, Fault.RATE_LIMIT, None, None]
    assert FaultPlan({Fault.AUTH: 1.0}, max_consecutive=0).draw("r", 5) is Fault.AUTH  # permanent stays


def test_rates_are_checked() -> None:
    with pytest.raises(ValueError):
        FaultPlan({Fault.AUTH: 0.7, Fault.HANG: 0.7})
    with pytest.raises(ValueError):
        FaultPlan({Fault.AUTH: -0.1})


KINDS = {
    Fault.RATE_LIMIT: ModelErrorKind.TRANSIENT, Fault.RATE_LIMIT_RETRY_AFTER: ModelErrorKind.TRANSIENT,
    Fault.SERVER_ERROR: ModelErrorKind.TRANSIENT, Fault.BAD_GATEWAY: ModelErrorKind.TRANSIENT,
    Fault.UNAVAILABLE: ModelErrorKind.TRANSIENT, Fault.DROPPED: ModelErrorKind.TRANSIENT,
    Fault.TIMEOUT: ModelErrorKind.TIMEOUT, Fault.HANG: ModelErrorKind.TIMEOUT,
    Fault.AUTH: ModelErrorKind.AUTH, Fault.FORBIDDEN: ModelErrorKind.AUTH, Fault.NOT_FOUND: ModelErrorKind.NOT_FOUND,
    Fault.BAD_REQUEST: ModelErrorKind.BAD_REQUEST, Fault.CONTEXT_WINDOW: ModelErrorKind.CONTEXT_WINDOW,
}


@pytest.mark.parametrize("fault", list(KINDS))
async def test_each_provider_fault_is_classified_like_the_real_one(fault: Fault, llm_sleeps: list[float]) -> None:
    faulty = FaultyModel(lambda m, t: "fine", FaultPlan({fault: 1.0}, max_consecutive=100, retry_after_s=3))
    timeout = 0.05 if fault is Fault.HANG else 30.0
    model = LiteLLMModel(faulty.register(f"kind-{fault.value}"), role="simulator", max_retries=2, timeout_s=timeout)
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    assert info.value.kind is KINDS[fault] and info.value.role == "simulator"
    retried = fault in TRANSIENT or fault is Fault.HANG
    assert faulty.log.attempts == (3 if retried else 1) and info.value.usage.retries == (2 if retried else 0)
    if fault is Fault.RATE_LIMIT_RETRY_AFTER:
        assert llm_sleeps == [3.0, 3.0]


@pytest.mark.parametrize("fault", MALFORMED)
async def test_malformed_replies_come_back_as_replies(fault: Fault) -> None:
    faulty = FaultyModel(lambda m, t: "All stored.", FaultPlan({fault: 1.0}, huge_chars=5000))
    result = await LiteLLMModel(faulty.register(f"bad-{fault.value}"), role="agent").chat(HELLO, tools=TOOLS)
    text = result.text or ""
    if fault is Fault.NON_JSON_ARGS:
        assert result.tool_calls[0].name == "get_item" and result.tool_calls[0].arguments.endswith('"unterminated')
    elif fault is Fault.UNKNOWN_TOOL:
        assert result.tool_calls[0].name == "delete_all_records"
    elif fault is Fault.EMPTY:
        assert result.text is None and not result.tool_calls
    elif fault is Fault.HUGE:
        assert len(text) == 5000 and text.startswith("All stored.")
    elif fault is Fault.NUL_TEXT:
        assert text == "All\x00stored.\x00"
    else:  # invalid UTF-8 arrives decoded the way any UTF-8 decoder would: U+FFFD, no lone surrogates
        assert "\ufffd" in text and text.endswith("All stored.")
        text.encode("utf-8")


async def test_concurrent_callers_see_the_same_faults_as_sequential_ones(llm_sleeps: list[float]) -> None:
    async def run(concurrent: bool) -> list[int]:
        faulty = FaultyModel(lambda m, t: "ok", FaultPlan.spread(0.4, TRANSIENT, seed=7))
        model = LiteLLMModel(faulty.register("order"), role="agent")
        prompts = [[{"role": "user", "content": f"hello {i}"}] for i in range(30)]
        if concurrent:
            results = await asyncio.gather(*(model.chat(p, seed=i) for i, p in enumerate(prompts)))
        else:
            results = [await model.chat(p, seed=i) for i, p in enumerate(prompts)]
        return [r.usage.retries for r in results]

    sequential = await run(False)
    concurrent = await run(True)
    assert sequential == concurrent and sum(sequential) > 0


async def test_permanent_faults_are_never_retried(llm_sleeps: list[float]) -> None:
    for fault in PERMANENT:
        faulty = FaultyModel(lambda m, t: "ok", FaultPlan({fault: 1.0}))
        with pytest.raises(ModelError):
            await LiteLLMModel(faulty.register("perm"), role="judge").chat(HELLO)
        assert faulty.log.attempts == 1
    assert llm_sleeps == []
