"""Error classification and retries, through the real litellm path; back-off never sleeps."""

from __future__ import annotations

import asyncio
import email.utils
import random
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from simlab.llm import (
    LiteLLMModel,
    ModelError,
    ModelErrorKind,
    ModelLimiter,
    RetryPolicy,
    classify,
    register_fake,
    retry_after_seconds,
)
from simlab.llm import retry as retry_mod
from tests.support import LazyModule

litellm: Any = LazyModule("litellm")  # imported by the first test that uses it, not at collection

HELLO = [{"role": "user", "content": "hi"}]
REQ = httpx.Request("POST", "https://provider.invalid/v1/chat/completions")
KW = {"model": "m", "llm_provider": "simlab-fake"}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def rate_limited(retry_after: str | None = None) -> litellm.RateLimitError:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return litellm.RateLimitError("slow down", response=httpx.Response(429, headers=headers, request=REQ), **KW)


ERRORS: list[tuple[Callable[[], BaseException], ModelErrorKind]] = [
    (lambda: rate_limited(), ModelErrorKind.TRANSIENT),
    (lambda: litellm.Timeout("slow", **KW), ModelErrorKind.TIMEOUT),
    (lambda: litellm.APIConnectionError("reset", **KW), ModelErrorKind.TRANSIENT),
    (lambda: litellm.InternalServerError("500", **KW), ModelErrorKind.TRANSIENT),
    (lambda: litellm.ServiceUnavailableError("503", **KW), ModelErrorKind.TRANSIENT),
    (lambda: litellm.BadGatewayError("502", **KW), ModelErrorKind.TRANSIENT),
    (lambda: TimeoutError(), ModelErrorKind.TIMEOUT),
    (lambda: litellm.AuthenticationError("401", **KW), ModelErrorKind.AUTH),
    (lambda: litellm.PermissionDeniedError("403", response=httpx.Response(403, request=REQ), **KW), ModelErrorKind.AUTH),
    (lambda: litellm.NotFoundError("404", **KW), ModelErrorKind.NOT_FOUND),
    (lambda: litellm.ContextWindowExceededError("too long", **KW), ModelErrorKind.CONTEXT_WINDOW),
    (lambda: litellm.BadRequestError("400", **KW), ModelErrorKind.BAD_REQUEST),
    (lambda: litellm.UnprocessableEntityError("422", response=httpx.Response(422, request=REQ), **KW),
     ModelErrorKind.BAD_REQUEST),
    (lambda: litellm.ContentPolicyViolationError("nope", **KW), ModelErrorKind.BAD_REQUEST),
    (lambda: litellm.APIError(503, "overloaded", **KW), ModelErrorKind.TRANSIENT),
    (lambda: litellm.APIError(418, "teapot", **KW), ModelErrorKind.BAD_REQUEST),
]


@pytest.mark.parametrize(("make", "kind"), ERRORS)
def test_classify_every_error_class(make: Callable[[], BaseException], kind: ModelErrorKind) -> None:
    assert classify(make()) is kind


def test_litellm_timeout_is_not_an_api_connection_error() -> None:
    assert not isinstance(litellm.Timeout("t", **KW), litellm.APIConnectionError)
    assert isinstance(litellm.ContextWindowExceededError("c", **KW), litellm.BadRequestError)


def test_plain_python_errors_are_not_model_errors() -> None:
    assert classify(KeyError("bug")) is None
    assert classify(ValueError("bug")) is None


def failing(times: int, make: Callable[[], BaseException], reply: str = "recovered") -> Callable[..., str]:
    calls = {"n": 0}

    def fn(messages: Any, tools: Any) -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise make()
        return reply

    fn.calls = calls  # type: ignore[attr-defined]
    return fn


async def test_transient_error_recovers_after_two_failures(llm_sleeps: list[float]) -> None:
    fn = failing(2, lambda: litellm.ServiceUnavailableError("busy", **KW))
    policy = RetryPolicy(max_retries=4, rng=random.Random(0))
    rng = random.Random(0)
    expected = [rng.uniform(0, 0.5), rng.uniform(0, 1.0)]
    model = LiteLLMModel(register_fake("flaky", fn), role="agent", retry_policy=policy)
    result = await model.chat(HELLO)
    assert result.text == "recovered"
    assert fn.calls["n"] == 3  # type: ignore[attr-defined]
    assert llm_sleeps == pytest.approx(expected)  # jittered exponential, asked of the injected sleep
    assert result.usage.retries == 2
    assert result.usage.retry_wait_s == pytest.approx(sum(expected))


async def test_jitter_stays_within_exponential_ceiling(llm_sleeps: list[float]) -> None:
    fn = failing(4, lambda: litellm.APIConnectionError("reset", **KW))
    model = LiteLLMModel(register_fake("jitter", fn), role="agent", max_retries=4)
    result = await model.chat(HELLO)
    assert result.usage.retries == 4 and len(llm_sleeps) == 4
    for n, wait in enumerate(llm_sleeps):
        assert 0.0 <= wait <= 0.5 * 2**n


async def test_back_off_windows_double_up_to_max_wait(llm_sleeps: list[float]) -> None:
    fn = failing(8, lambda: litellm.ServiceUnavailableError("busy", **KW))
    policy = RetryPolicy(max_retries=8, rng=random.Random(3))
    rng = random.Random(3)
    expected = [rng.uniform(0, min(30.0, 0.5 * 2**n)) for n in range(8)]  # windows 0.5 … 30, 30
    result = await LiteLLMModel(register_fake("windows", fn), role="agent", retry_policy=policy).chat(HELLO)
    assert result.text == "recovered" and llm_sleeps == pytest.approx(expected)


async def test_max_retries_counts_per_call(llm_sleeps: list[float]) -> None:
    fn = failing(100, lambda: litellm.ServiceUnavailableError("busy", **KW))
    model = LiteLLMModel(register_fake("per-call", fn), role="agent", max_retries=2)
    for call in (1, 2):  # one policy, one budget of retries for each call
        with pytest.raises(ModelError) as caught:
            await model.chat(HELLO)
        assert caught.value.usage is not None and caught.value.usage.retries == 2
        assert fn.calls["n"] == 3 * call and len(llm_sleeps) == 2 * call  # type: ignore[attr-defined]
    assert "gave up after 2 retries" in str(caught.value)


async def test_no_retries_means_one_attempt(llm_sleeps: list[float]) -> None:
    fn = failing(1, lambda: rate_limited("2"))
    with pytest.raises(ModelError) as caught:
        await LiteLLMModel(register_fake("no-retries", fn), role="agent", max_retries=0).chat(HELLO)
    assert caught.value.kind is ModelErrorKind.TRANSIENT and llm_sleeps == []
    assert fn.calls["n"] == 1  # type: ignore[attr-defined]


async def test_no_slot_is_held_while_backing_off() -> None:
    limiter = ModelLimiter({"simlab-fake/slots": 1})
    held: list[int] = []

    async def sleep(seconds: float) -> None:
        held.append(limiter.in_flight.get("simlab-fake/slots", 0))

    fn = failing(2, lambda: rate_limited("1"))
    model = LiteLLMModel(register_fake("slots", fn), role="agent", limiter=limiter, sleep=sleep)
    result = await model.chat(HELLO)
    assert held == [0, 0] and limiter.peak["simlab-fake/slots"] == 1  # taken by each attempt, not the waits
    assert result.usage.retries == 2 and result.usage.retry_wait_s == 2.0


async def test_retry_after_seconds_is_honoured(llm_sleeps: list[float]) -> None:
    fn = failing(1, lambda: rate_limited("7"))
    result = await LiteLLMModel(register_fake("retry-after", fn), role="agent").chat(HELLO)
    assert llm_sleeps == [7.0]
    assert result.usage.retries == 1 and result.usage.retry_wait_s == 7.0


async def test_retry_after_is_capped(llm_sleeps: list[float]) -> None:
    fn = failing(1, lambda: rate_limited("3600"))
    await LiteLLMModel(register_fake("retry-after-long", fn), role="agent").chat(HELLO)
    assert llm_sleeps == [60.0]


async def test_per_instance_sleep_overrides_module_sleep(llm_sleeps: list[float]) -> None:
    mine: list[float] = []

    async def sleep(seconds: float) -> None:
        mine.append(seconds)

    fn = failing(1, lambda: rate_limited("2"))
    await LiteLLMModel(register_fake("own-sleep", fn), role="agent", sleep=sleep).chat(HELLO)
    assert mine == [2.0] and llm_sleeps == []


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(rate_limited(date), now=now) == pytest.approx(30.0)
    assert retry_after_seconds(rate_limited("1.5")) == 1.5
    assert retry_after_seconds(rate_limited()) is None
    assert retry_after_seconds(rate_limited("garbage")) is None
    by_kwarg = litellm.RateLimitError("x", headers={"Retry-After": "4"}, **KW)
    assert retry_after_seconds(by_kwarg) == 4.0
    ms = litellm.RateLimitError("x", response=httpx.Response(429, headers={"retry-after-ms": "250"}, request=REQ), **KW)
    assert retry_after_seconds(ms) == 0.25


@pytest.mark.parametrize(("make", "kind"), [
    (lambda: litellm.AuthenticationError("bad key", **KW), ModelErrorKind.AUTH),
    (lambda: litellm.PermissionDeniedError("no", response=httpx.Response(403, request=REQ), **KW), ModelErrorKind.AUTH),
    (lambda: litellm.NotFoundError("no such model", **KW), ModelErrorKind.NOT_FOUND),
    (lambda: litellm.BadRequestError("bad", **KW), ModelErrorKind.BAD_REQUEST),
    (lambda: litellm.ContextWindowExceededError("too long", **KW), ModelErrorKind.CONTEXT_WINDOW),
])
async def test_permanent_errors_fail_fast(make: Callable[[], BaseException], kind: ModelErrorKind,
                                         llm_sleeps: list[float]) -> None:
    fn = failing(100, make)
    model = LiteLLMModel(register_fake(f"perm-{kind.value}", fn), role="simulator")
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    err = info.value
    assert err.kind is kind and err.role == "simulator" and err.model == f"simlab-fake/perm-{kind.value}"
    assert fn.calls["n"] == 1 and llm_sleeps == []  # type: ignore[attr-defined]
    assert err.usage.retries == 0
    assert err.kind.permanent is (kind is not ModelErrorKind.CONTEXT_WINDOW)


async def test_retries_exhausted_is_transient(llm_sleeps: list[float]) -> None:
    fn = failing(100, lambda: rate_limited("1"))
    model = LiteLLMModel(register_fake("always-429", fn), role="agent", max_retries=3)
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    err = info.value
    assert err.kind is ModelErrorKind.TRANSIENT and not err.kind.permanent
    assert fn.calls["n"] == 4  # type: ignore[attr-defined]
    assert llm_sleeps == [1.0, 1.0, 1.0]
    assert err.usage.retries == 3 and err.usage.retry_wait_s == 3.0
    assert "gave up after 3 retries" in str(err) and "RateLimitError" in str(err)
    assert isinstance(err.__cause__, litellm.RateLimitError)


async def test_timeouts_exhausted_is_timeout(llm_sleeps: list[float]) -> None:
    fn = failing(100, lambda: litellm.Timeout("no answer", **KW))
    with pytest.raises(ModelError) as info:
        await LiteLLMModel(register_fake("always-timeout", fn), role="agent", max_retries=2).chat(HELLO)
    assert info.value.kind is ModelErrorKind.TIMEOUT and info.value.usage.retries == 2


async def test_hung_call_hits_per_call_timeout(llm_sleeps: list[float]) -> None:
    async def hang(messages: Any, tools: Any) -> str:
        await asyncio.Event().wait()
        return "never"

    model = LiteLLMModel(register_fake("hang", hang), role="agent", timeout_s=0.05, max_retries=1)
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    assert info.value.kind is ModelErrorKind.TIMEOUT and info.value.usage.retries == 1


async def test_mock_response_rate_limit_string_is_retried(llm_sleeps: list[float]) -> None:
    model = LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", max_retries=1,
                         params={"mock_response": "litellm.RateLimitError"})
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    assert info.value.kind is ModelErrorKind.TRANSIENT and len(llm_sleeps) == 1


def test_module_sleep_is_replaced_in_tests() -> None:
    assert retry_mod.backoff_sleep.__name__ == "fake_sleep"


def _wrapped(outer: BaseException, *causes: BaseException) -> BaseException:
    """``outer`` raised from ``causes[0]``, raised from ``causes[1]``… as LiteLLM chains them."""
    current = outer
    for cause in causes:
        current.__cause__ = cause
        current = cause
    return outer


CHAINED: list[tuple[Callable[[], BaseException], ModelErrorKind]] = [
    # LiteLLM 1.110 wraps a missing OpenAI key in an InternalServerError (status 500)
    (lambda: litellm.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`, or set "
                                         "the `OPENAI_API_KEY` environment variable.", **KW), ModelErrorKind.AUTH),
    (lambda: litellm.InternalServerError("Error code: 401 - {'error': {'message': 'Incorrect API key provided'}}",
                                         **KW), ModelErrorKind.AUTH),
    (lambda: litellm.APIError(401, "who are you", **KW), ModelErrorKind.AUTH),
    (lambda: litellm.BadRequestError("invalid x-api-key", **KW), ModelErrorKind.AUTH),
    # connection refused / DNS: never connected
    (lambda: _wrapped(litellm.InternalServerError("Connection error.", **KW), ConnectionRefusedError(111, "refused")),
     ModelErrorKind.UNREACHABLE),
    (lambda: _wrapped(litellm.InternalServerError("Connection error.", **KW),
                      httpx.ConnectError("[Errno -2] Name or service not known")), ModelErrorKind.UNREACHABLE),
    (lambda: _wrapped(litellm.APIConnectionError("Connection error.", **KW), socket.gaierror(-2, "unknown host")),
     ModelErrorKind.UNREACHABLE),
    # connected, then dropped: transient
    (lambda: _wrapped(litellm.APIConnectionError("reset", **KW), httpx.ReadError("peer reset")),
     ModelErrorKind.TRANSIENT),
    # built wrong here: never transient
    (lambda: _wrapped(litellm.InternalServerError("OpenAIException - 'utf-8' codec can't encode", **KW),
                      UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")), ModelErrorKind.BAD_REQUEST),
    (lambda: _wrapped(litellm.InternalServerError("Cannot combine AUTHORIZATION header with AUTH argument", **KW),
                      ValueError("Cannot combine AUTHORIZATION header")), ModelErrorKind.BAD_REQUEST),
]


@pytest.mark.parametrize(("make", "kind"), CHAINED)
def test_classify_reads_the_status_text_and_causes_not_only_the_class(make: Callable[[], BaseException],
                                                                     kind: ModelErrorKind) -> None:
    assert classify(make()) is kind


async def test_an_endpoint_that_never_answers_stops_after_bounded_retries(llm_sleeps: list[float]) -> None:
    def refuse(messages: Any, tools: Any = None, **_: Any) -> None:
        raise _wrapped(litellm.InternalServerError("Connection error.", **KW), ConnectionRefusedError(111, "refused"))

    model = LiteLLMModel(register_fake("never", refuse), role="agent", max_retries=3)
    with pytest.raises(ModelError) as caught:
        await model.chat([{"role": "user", "content": "hi"}])
    assert caught.value.kind is ModelErrorKind.UNREACHABLE and caught.value.kind.permanent
    assert len(llm_sleeps) == 3 and "never answered" in str(caught.value)


async def test_an_endpoint_that_answered_before_dropping_is_transient_not_dead(llm_sleeps: list[float]) -> None:
    calls = {"n": 0}

    def flaky(messages: Any, tools: Any = None, **_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise litellm.ServiceUnavailableError("503", **KW)  # it answered: the endpoint is alive
        raise _wrapped(litellm.InternalServerError("Connection error.", **KW), ConnectionRefusedError(111, "refused"))

    model = LiteLLMModel(register_fake("dropping", flaky), role="agent", max_retries=2)
    with pytest.raises(ModelError) as caught:
        await model.chat([{"role": "user", "content": "hi"}])
    assert caught.value.kind is ModelErrorKind.TRANSIENT  # an error trial, not a stopped run
