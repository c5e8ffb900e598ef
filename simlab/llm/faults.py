"""A fault-injecting fake model on the real LiteLLM call path, for drills and robustness tests.

Why: a nightly suite meets providers that fail in every way they can. ``FaultyModel`` wraps a
reply function (the well-behaved model) and, per attempt, injects one fault drawn from a
``FaultPlan``: transient provider errors (429 with and without Retry-After, 500/502/503, timeouts,
dropped connections), a hang, permanent errors (401/403/404/400), context window exceeded, or a
malformed reply (tool arguments that are not JSON, an unknown tool, an empty message, a 1 MB
message, NUL bytes, invalid UTF-8). Registered with ``register_fake`` it is served as
``simlab-fake/<name>``, so ``litellm.acompletion``, simlab's classification, retries and usage all
run for real.

Deterministic by seed, whatever the scheduling: the draw for an attempt is a sha256 of the plan's
seed, the request (messages, tools, call seed) and how many times this same request was seen
before. A transient fault (or a hang) hits the same request at most ``max_consecutive`` times in a
row, as transient faults do, so a run with retries always gets through.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from simlab.llm.fakes import ReplyFn, _accepted, _call, normalize_reply, register_fake
from simlab.llm.lazy import load_litellm
from simlab.llm.types import ChatResult


class Fault(str, Enum):
    RATE_LIMIT = "rate_limit_429"
    RATE_LIMIT_RETRY_AFTER = "rate_limit_429_retry_after"
    SERVER_ERROR = "server_error_500"
    BAD_GATEWAY = "bad_gateway_502"
    UNAVAILABLE = "unavailable_503"
    TIMEOUT = "timeout"
    DROPPED = "dropped_connection"
    HANG = "hang"  # never answers: cut off by the caller's per-call timeout
    AUTH = "auth_401"
    FORBIDDEN = "forbidden_403"
    NOT_FOUND = "not_found_404"
    BAD_REQUEST = "bad_request_400"
    CONTEXT_WINDOW = "context_window"
    NON_JSON_ARGS = "non_json_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    EMPTY = "empty_message"
    HUGE = "huge_message"
    NUL_TEXT = "nul_bytes"
    INVALID_UTF8 = "invalid_utf8"


TRANSIENT = (
    Fault.RATE_LIMIT,
    Fault.RATE_LIMIT_RETRY_AFTER,
    Fault.SERVER_ERROR,
    Fault.BAD_GATEWAY,
    Fault.UNAVAILABLE,
    Fault.TIMEOUT,
    Fault.DROPPED,
)
PERMANENT = (Fault.AUTH, Fault.FORBIDDEN, Fault.NOT_FOUND, Fault.BAD_REQUEST)
MALFORMED = (
    Fault.NON_JSON_ARGS,
    Fault.UNKNOWN_TOOL,
    Fault.EMPTY,
    Fault.HUGE,
    Fault.NUL_TEXT,
    Fault.INVALID_UTF8,
)
_RETRIED = frozenset((*TRANSIENT, Fault.HANG))
_NEEDS_TOOLS = frozenset((Fault.NON_JSON_ARGS, Fault.UNKNOWN_TOOL))
UNKNOWN_TOOL_NAME = "delete_all_records"


@dataclass(frozen=True)
class FaultPlan:
    """Which faults, how often (fractions of attempts, summing to at most 1), from which seed."""

    rates: Mapping[Fault, float]
    seed: int = 0
    max_consecutive: int = 2  # a transient fault or hang hits one request at most this often in a row
    retry_after_s: float = 1.0
    hang_s: float = 3600.0
    huge_chars: int = 1_000_000
    echo_secrets: bool = False  # error messages repeat the key and headers the call carried

    def __post_init__(self) -> None:
        rates = {Fault(k): float(v) for k, v in self.rates.items()}
        if any(v < 0 for v in rates.values()) or sum(rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates must be >= 0 and sum to at most 1, got {rates}")
        object.__setattr__(self, "rates", rates)

    @classmethod
    def spread(cls, total: float, faults: Iterable[Fault], **settings: Any) -> FaultPlan:
        """``total`` shared evenly among ``faults``: ``FaultPlan.spread(0.3, TRANSIENT, seed=1)``."""
        chosen = list(faults)
        return cls({f: total / len(chosen) for f in chosen}, **settings)

    def draw(self, request: str, attempt: int) -> Fault | None:
        """The fault for attempt ``attempt`` (0-based) of ``request``, or None."""
        digest = hashlib.sha256(f"simlab-faults/{self.seed}/{request}/{attempt}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2.0**64
        for fault in Fault:  # a fixed order: the same point always means the same fault
            point -= self.rates.get(fault, 0.0)
            if point < 0:
                if fault in _RETRIED and attempt >= self.max_consecutive:
                    return None
                return fault
        return None


@dataclass
class FaultLog:
    """What a ``FaultyModel`` did: attempts seen and faults injected, per kind."""

    attempts: int = 0
    injected: Counter = field(default_factory=Counter)
    in_flight: int = 0
    peak: int = 0
    events: list[tuple[str, int, Fault | None]] = field(default_factory=list)  # (request, attempt, fault)

    def count(self, faults: Iterable[Fault]) -> int:
        return sum(self.injected[f] for f in faults)


class FaultyModel:
    """A reply function that misbehaves as ``plan`` says; ``reply`` is the well-behaved model."""

    def __init__(self, reply: ReplyFn, plan: FaultPlan):
        self.reply = reply
        self.plan = plan
        self.log = FaultLog()
        self._seen: Counter = Counter()

    def register(self, name: str) -> str:
        """Serve this model as ``simlab-fake/<name>`` through LiteLLM; returns the model string."""
        return register_fake(name, self)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
        api_key: str | None = None,
        headers: dict[str, Any] | None = None,
    ) -> Any:
        request = _request_key(messages, tools, seed)
        attempt = self._seen[request]
        self._seen[request] += 1
        fault = self.plan.draw(request, attempt)
        if fault in _NEEDS_TOOLS and not tools:
            fault = None  # nothing to call: this attempt behaves
        self.log.attempts += 1
        self.log.events.append((request[:12], attempt, fault))
        if fault is not None:
            self.log.injected[fault] += 1
        self.log.in_flight += 1
        self.log.peak = max(self.log.peak, self.log.in_flight)
        try:
            if fault is Fault.HANG:
                await asyncio.sleep(self.plan.hang_s)
            elif fault is not None and fault not in MALFORMED:
                raise _provider_error(
                    fault, self.plan, _echo(api_key, headers) if self.plan.echo_secrets else ""
                )
            await asyncio.sleep(0)  # a real call yields to the loop: let concurrency show
            good = await _call(self.reply, messages, tools, **_accepted(self.reply, {"seed": seed}))
        finally:
            self.log.in_flight -= 1
        if fault is None:
            return good
        return _malformed(fault, normalize_reply(good, messages, model="faulty"), tools or [], self.plan)


def _request_key(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, seed: int | None) -> str:
    names = [t.get("function", {}).get("name") for t in tools or []]
    text = json.dumps([messages, names, seed], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _echo(api_key: str | None, headers: dict[str, Any] | None) -> str:
    return f" (request had api_key={api_key!r}, headers={headers!r})"


def _provider_error(fault: Fault, plan: FaultPlan, echo: str) -> Exception:
    import httpx

    litellm = load_litellm()
    kw = {"model": "faulty", "llm_provider": "simlab-fake"}
    request = httpx.Request("POST", "https://faulty.invalid/v1/chat/completions")
    text = f"injected {fault.value}{echo}"
    if fault is Fault.RATE_LIMIT:
        return litellm.RateLimitError(text, response=httpx.Response(429, request=request), **kw)
    if fault is Fault.RATE_LIMIT_RETRY_AFTER:
        headers = {"retry-after": f"{plan.retry_after_s:g}"}
        return litellm.RateLimitError(
            text, response=httpx.Response(429, headers=headers, request=request), **kw
        )
    if fault is Fault.FORBIDDEN:
        return litellm.PermissionDeniedError(text, response=httpx.Response(403, request=request), **kw)
    if fault is Fault.TIMEOUT:
        return litellm.Timeout(text, **kw)
    classes = {
        Fault.SERVER_ERROR: litellm.InternalServerError,
        Fault.BAD_GATEWAY: litellm.BadGatewayError,
        Fault.UNAVAILABLE: litellm.ServiceUnavailableError,
        Fault.DROPPED: litellm.APIConnectionError,
        Fault.AUTH: litellm.AuthenticationError,
        Fault.NOT_FOUND: litellm.NotFoundError,
        Fault.BAD_REQUEST: litellm.BadRequestError,
        Fault.CONTEXT_WINDOW: litellm.ContextWindowExceededError,
    }
    return classes[fault](text, **kw)


def _malformed(
    fault: Fault, good: ChatResult, tools: list[dict[str, Any]], plan: FaultPlan
) -> dict[str, Any]:
    """The well-behaved reply, broken in the way ``fault`` says. Text faults answer in text only."""
    text = good.text or "I have taken care of it, it is stored."
    calls = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in good.tool_calls]
    if fault is Fault.EMPTY:
        return {"text": ""}
    if fault is Fault.HUGE:
        filler = " Here is a lot more detail, again and again." * (plan.huge_chars // 44 + 1)
        return {"text": (text + filler)[: max(plan.huge_chars, len(text))]}
    if fault is Fault.NUL_TEXT:
        return {"text": "\x00".join(text.split(" ")) + "\x00"}
    if fault is Fault.INVALID_UTF8:  # undecodable bytes, as Python holds them (surrogate escapes)
        return {"text": b"\xff\xfe broken \xc3\x28 bytes ".decode("utf-8", "surrogateescape") + text}
    first = tools[0]["function"]["name"]
    if fault is Fault.NON_JSON_ARGS:
        if not calls:
            calls = [{"name": first, "arguments": "{}", "id": "call_bad"}]
        raw = calls[0]["arguments"]
        calls[0]["arguments"] = raw[: max(1, len(raw) // 2)] + ' "unterminated'
        return {"text": text, "tool_calls": calls}
    # UNKNOWN_TOOL
    return {
        "text": text,
        "tool_calls": [{"name": UNKNOWN_TOOL_NAME, "arguments": "{}", "id": "call_unknown"}],
    }


__all__ = [
    "MALFORMED",
    "PERMANENT",
    "TRANSIENT",
    "UNKNOWN_TOOL_NAME",
    "Fault",
    "FaultLog",
    "FaultPlan",
    "FaultyModel",
]
