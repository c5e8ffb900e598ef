"""Which provider errors are worth another try, and the back-off between tries.

Only transient errors are retried (rate limits, timeouts, connection drops, 5xx); everything
else fails fast so a bad key or an unknown model stops a run at the first call instead of
after minutes of back-off. LiteLLM's own retries are switched off by the client so nothing
retries twice.

Unknown exceptions: provider SDK errors (``openai.APIError`` family) are classified by their
HTTP status when they carry one (429/408/409/5xx transient, 401/403 auth, 404 not found, other
4xx bad request) and otherwise treated as permanent BAD_REQUEST. Plain Python exceptions that are
not provider errors (a ``TypeError`` in simlab's code, say) are not model errors at all:
``classify`` returns None and they propagate unchanged, so bugs keep their traceback.

tenacity is the retry engine (``call_with_retries``): its stop (``max_retries``), its exponential
window for the wait, simlab's classification as its retry predicate, and its sleep hook, which
sleeps through the policy's ``sleep`` or, when the policy has none, ``backoff_sleep`` looked up in
this module at call time. Tests never sleep: they give a policy (or ``LiteLLMModel``) its own
``sleep``, or replace ``backoff_sleep`` (``tests/conftest.py``'s autouse ``llm_sleeps``; forked
workers inherit it, and a test's ``simlab`` subprocess is started through ``tests/no_backoff.py``).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from simlab.llm.lazy import load_litellm
from simlab.llm.types import ModelErrorKind

log = logging.getLogger("simlab.llm")
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


async def backoff_sleep(seconds: float) -> None:
    """The module-wide back-off sleep; tests replace this attribute (see tests/conftest.py)."""
    await asyncio.sleep(seconds)


# --------------------------------------------------------------------------- classification


def _status_kind(status: int | None) -> ModelErrorKind | None:
    if status is None:
        return None
    if status in (408,):
        return ModelErrorKind.TIMEOUT
    if status in (409, 429) or status >= 500:
        return ModelErrorKind.TRANSIENT
    if status in (401, 403):
        return ModelErrorKind.AUTH
    if status == 404:
        return ModelErrorKind.NOT_FOUND
    if 400 <= status < 500:
        return ModelErrorKind.BAD_REQUEST
    return None


def cause_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen) and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


# A provider's way of saying "no valid credential", whatever exception class LiteLLM wraps it in:
# a missing OpenAI key surfaces as an InternalServerError ("Missing credentials ..."), and the openai
# client raises its bare OpenAIError ("The api_key client option must be set ...").
AUTH_TEXT = re.compile(
    r"missing credentials|missing [\w ]{0,20}api[ _-]?key|no api[ _-]?key|api[ _-]?key (?:is )?(?:not "
    r"set|missing|"
    r"required|not provided|not found)|(?:invalid|incorrect|wrong|expired|revoked)[ _-](?:x-)?api[ _-]?key|"
    r"\bunauthori[sz]ed\b|authentication (?:failed|error|required)|invalid[ _]authentication|"
    r"no auth credentials|invalid bearer token|could not validate credentials|"
    r"api[ _-]?key client option must be set",
    re.IGNORECASE,
)
# No connection was made at all: the endpoint is down, refuses, or its name does not resolve.
_UNREACHABLE = (
    "ConnectError",
    "ConnectTimeout",
    "ClientConnectorError",
    "ClientConnectorDNSError",
    "ConnectionRefusedError",
    "gaierror",
    "ClientConnectorCertificateError",
)


def _status_of(chain: list[BaseException]) -> int | None:
    for exc in chain:
        for name in ("status_code", "provider_status_code"):
            status = getattr(exc, name, None)
            if isinstance(status, int) and status != 500:  # LiteLLM says 500 for anything it wraps
                return status
    status = getattr(chain[0], "status_code", None)
    return status if isinstance(status, int) else None


def classify(exc: BaseException) -> ModelErrorKind | None:
    """The kind of a failed call, or None when ``exc`` is not a provider error (a bug: re-raise).

    TRANSIENT, TIMEOUT and UNREACHABLE are retried; the rest are final. Beyond the exception's
    class, the whole chain of causes is read: a rejected or missing credential is AUTH whatever
    class wraps it (its status or its text says so); a connection that was never made is
    UNREACHABLE; a request that could not be built here (a plain ValueError or TypeError below
    LiteLLM's wrapper, text it could not encode) is BAD_REQUEST, never transient.
    Order matters: LiteLLM's ContextWindowExceededError is a BadRequestError, and its Timeout is
    not an APIConnectionError.
    """
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return ModelErrorKind.TIMEOUT
    module = type(exc).__module__ or ""
    if not (module.startswith("litellm") or module.startswith("openai") or module.startswith("httpx")):
        return None
    chain = cause_chain(exc)
    if any(isinstance(e, UnicodeError) or type(e) in (ValueError, TypeError) for e in chain):
        # the request could not be built here (text UTF-8 cannot hold, a URL with credentials beside an
        # Authorization header…): no answer came, and retrying cannot help
        return ModelErrorKind.BAD_REQUEST
    status = _status_of(chain)
    if status in (401, 403) or any(AUTH_TEXT.search(str(e)) for e in chain[:3]):
        return ModelErrorKind.AUTH
    if module.startswith("httpx"):  # a plain HTTP call (an HTTP agent): no LiteLLM class can match it
        return _transport_kind(exc, chain, status)
    litellm = load_litellm()
    ordered: list[tuple[tuple[type[BaseException], ...], ModelErrorKind]] = [
        ((litellm.ContextWindowExceededError,), ModelErrorKind.CONTEXT_WINDOW),
        ((litellm.Timeout,), ModelErrorKind.TIMEOUT),
        (
            (
                litellm.RateLimitError,
                litellm.APIConnectionError,
                litellm.InternalServerError,
                litellm.ServiceUnavailableError,
                litellm.BadGatewayError,
            ),
            ModelErrorKind.TRANSIENT,
        ),
        ((litellm.AuthenticationError, litellm.PermissionDeniedError), ModelErrorKind.AUTH),
        ((litellm.NotFoundError,), ModelErrorKind.NOT_FOUND),
        ((litellm.BadRequestError, litellm.UnprocessableEntityError), ModelErrorKind.BAD_REQUEST),
    ]
    for classes, kind in ordered:
        if isinstance(exc, classes):
            if kind is ModelErrorKind.TRANSIENT and _never_connected(chain):
                return ModelErrorKind.UNREACHABLE
            return kind
    return _transport_kind(exc, chain, status)


def _transport_kind(exc: BaseException, chain: list[BaseException], status: int | None) -> ModelErrorKind:
    """An error of the HTTP layer (httpx's, or the openai SDK's): timeouts, connections, statuses.
    An httpx error is placed without importing the openai SDK."""
    import httpx

    timeouts: tuple[type[BaseException], ...] = (httpx.TimeoutException,)
    connections: tuple[type[BaseException], ...] = (httpx.TransportError,)
    if not (type(exc).__module__ or "").startswith("httpx"):
        import openai

        timeouts, connections = (
            timeouts + (openai.APITimeoutError,),
            connections + (openai.APIConnectionError,),
        )
    if isinstance(exc, timeouts):
        return ModelErrorKind.TIMEOUT
    if isinstance(exc, connections):
        return ModelErrorKind.UNREACHABLE if _never_connected(chain) else ModelErrorKind.TRANSIENT
    by_status = _status_kind(status)
    if by_status is not None:
        return by_status
    return ModelErrorKind.BAD_REQUEST  # a provider error we cannot place: do not hammer the provider


def _never_connected(chain: list[BaseException]) -> bool:
    return any(type(e).__name__ in _UNREACHABLE for e in chain)


def settled(
    exc: BaseException, stats: RetryStats, describe: Callable[[BaseException], str]
) -> tuple[ModelErrorKind, str] | None:
    """How a call that failed for good is reported: its kind (UNREACHABLE only when the endpoint
    never answered any attempt) and its message (with the retries spent, for a retryable kind).
    None when ``exc`` is no provider error (a bug: re-raise it)."""
    kind = classify(exc)
    if kind is None:
        return None
    if kind is ModelErrorKind.UNREACHABLE and stats.connected:
        kind = ModelErrorKind.TRANSIENT  # it answered before: a dropped connection, not a dead endpoint
    message = describe(exc)
    if kind.retryable:
        message = f"gave up after {stats.retries} retries ({stats.waited_s:.2f}s waited): {message}"
    return kind, message


def is_retryable(exc: BaseException) -> bool:
    kind = classify(exc)
    return kind is not None and kind.retryable


# --------------------------------------------------------------------------- Retry-After


def _headers_of(exc: BaseException) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for candidate in (
        getattr(exc, "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if candidate is not None and hasattr(candidate, "items"):
            found.append(candidate)
    return found


def retry_after_seconds(exc: BaseException, *, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms``, ``retry-after`` as seconds or an
    HTTP date), or None when it did not say."""
    for headers in _headers_of(exc):
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        if "retry-after-ms" in lowered:
            try:
                return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
            except ValueError:
                pass
        value = lowered.get("retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            continue
        if when is None:
            continue
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None


# --------------------------------------------------------------------------- policy


@dataclass
class RetryPolicy:
    """How hard to try: ``max_retries`` after the first attempt, full-jitter exponential back-off
    (``uniform(0, min(max_wait_s, multiplier * 2**n))`` before retry n + 1) unless the provider sent
    Retry-After, which is honoured up to ``retry_after_cap_s``. ``sleep`` None means the module's
    ``backoff_sleep``; ``rng`` makes the jitter reproducible in tests."""

    max_retries: int = 4
    multiplier: float = 0.5
    max_wait_s: float = 30.0
    retry_after_cap_s: float = 60.0
    sleep: Sleep | None = None
    rng: random.Random = field(default_factory=random.Random)

    def wait(self, state: RetryCallState) -> float:
        """tenacity's wait: seconds before the next attempt, after attempt ``state.attempt_number``
        failed. The window is tenacity's ``wait_exponential``; the jitter is drawn from ``rng``
        (tenacity's ``wait_random_exponential`` draws from the global ``random``)."""
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is not None:
            asked = retry_after_seconds(exc)
            if asked is not None:
                return min(asked, self.retry_after_cap_s)
        window = wait_exponential(multiplier=self.multiplier, max=self.max_wait_s)(state)
        return self.rng.uniform(0.0, window)


@dataclass
class RetryStats:
    """What the retry loop spent: filled in even when the call finally fails."""

    retries: int = 0
    waited_s: float = 0.0
    last_error: BaseException | None = None
    waits: list[float] = field(default_factory=list)
    connected: bool = False  # some attempt reached the endpoint (even if it then failed)


async def wait_out(policy: RetryPolicy, seconds: float) -> None:
    """The wait before a retry, after a failed call (``sim/turn_wait`` knows a turn suspended here:
    waiting on its provider's or service's failure, not on the agent)."""
    await (policy.sleep or backoff_sleep)(seconds)


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    stats: RetryStats,
    *,
    describe: Callable[[BaseException], str] = str,
) -> T:
    """Run ``attempt`` until it succeeds, fails permanently, or retries run out.

    The first attempt runs bare: a call that succeeds builds no retry machinery (tenacity's costs
    about 130 Python calls). After a first failure tenacity runs the call, its first attempt
    re-raising that failure, so that it sees the whole history. The last exception is re-raised
    unchanged; ``stats`` says how many retries and how long was waited (what was asked of the
    sleep). ``describe`` renders an error for the log (the client passes a scrubber).
    """
    try:
        return await attempt()
    except Exception as exc:
        first: BaseException | None = exc

    async def replay_then_attempt() -> T:
        nonlocal first
        if first is not None:
            failed, first = first, None
            raise failed
        return await attempt()

    def remember(exc: BaseException) -> bool:
        stats.last_error = exc
        kind = classify(exc)
        stats.connected = stats.connected or kind is not ModelErrorKind.UNREACHABLE
        return kind is not None and kind.retryable

    def record(state: RetryCallState) -> None:
        seconds = state.next_action.sleep if state.next_action is not None else 0.0
        stats.retries += 1
        stats.waited_s += seconds
        stats.waits.append(seconds)
        exc = stats.last_error
        log.info("retry %d after %.2fs: %s", stats.retries, seconds, describe(exc) if exc else "")

    async def sleep(seconds: float) -> None:
        await wait_out(policy, seconds)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=policy.wait,
        retry=retry_if_exception(remember),
        before_sleep=record,
        sleep=sleep,
        reraise=True,
    )
    return await retrying(replay_then_attempt)
