"""``LiteLLMModel``: one async chat call to any LiteLLM model, with simlab's retries and usage.

LiteLLM's own retries are off (``num_retries=0, max_retries=0``) so that only ``retry.py``
retries and the transcript can say how often. Usage never invents numbers: tokens and cost the
provider did not report stay ``None``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from typing import Any

from simlab.llm.cache import ResponseCache, cache_key_request, request_key
from simlab.llm.lazy import load_litellm, unlogged
from simlab.llm.limits import ModelLimiter
from simlab.llm.retry import RetryPolicy, RetryStats, Sleep, call_with_retries, settled
from simlab.llm.types import ChatResult, Message, ModelError, ModelErrorKind, ToolCallRequest
from simlab.redact import mask_url, safe_settings, scrub, secret_values
from simlab.transcript import Pin, Usage
from simlab.transcript.model import cost_usd, token_count

log = logging.getLogger("simlab.llm")

# Behind an ``api_base`` simlab prices a call itself (``price:`` or unknown) and drops LiteLLM's
# figure, so LiteLLM is given a per-token price to skip its search of the whole price map for a
# name it does not know (a third of its work per call for a local server's model). Not zero:
# LiteLLM investigates a zero cost. Never reported: ``chat`` replaces the cost it yields.
_PLACEHOLDER_PRICE_PER_TOKEN = 1e-9

# Keys simlab sets itself; letting ``params`` override them would break retries or leak keys.
_RESERVED = frozenset({"model", "messages", "tools", "num_retries", "max_retries", "stream", "api_key"})
_MAX_ERROR_CHARS = 800


class LiteLLMModel:
    """A ``ChatModel`` backed by ``litellm.acompletion``.

    ``api_key_env`` names the environment variable holding the key; it is read at call time and
    never stored. ``params`` are extra LiteLLM arguments (``max_tokens``, ``mock_response``...).
    """

    def __init__(  # noqa: PLR0913 - keyword-only: one per setting of a model role
        self,
        model: str,
        *,
        role: str,
        api_base: str | None = None,
        api_key_env: str | None = None,
        temperature: float | None = None,
        params: dict[str, Any] | None = None,
        price: dict[str, float] | None = None,
        max_retries: int = 4,
        timeout_s: float = 60.0,
        limiter: ModelLimiter | None = None,
        sleep: Sleep | None = None,
        retry_policy: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
    ):
        params = dict(params or {})
        clash = sorted(_RESERVED & params.keys())
        if clash:
            raise ValueError(
                f"{role} model {model}: params may not set {', '.join(clash)}"
                + (" (use api_key_env)" if "api_key" in clash else "")
            )
        self.model = model
        self.role = role
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.params = params
        self.price = dict(price) if price else None  # USD per million tokens: {"input": …, "output": …}
        self.timeout_s = timeout_s
        self.limiter = limiter
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        if sleep is not None:
            self.retry_policy.sleep = sleep
        self._seed_supported: bool | None = None
        self.cache = cache  # simlab's response cache (llm/cache.py), None when off

    def __repr__(self) -> str:  # no params: they might hold headers
        return f"LiteLLMModel({self.model!r}, role={self.role!r})"

    def pin(self) -> Pin:
        settings = safe_settings(self.params)
        settings["temperature"] = (
            self.temperature if self.temperature is not None else self.params.get("temperature")
        )
        settings["api_base"] = mask_url(self.api_base) if self.api_base else None
        if self.price:
            settings["price"] = self.price
        return Pin(kind="llm", ref=self.model, settings=settings)

    # ------------------------------------------------------------------ the call

    def _secrets(self) -> list[str]:
        found = secret_values(self.params)
        if self.api_key_env:
            found.append(os.environ.get(self.api_key_env, ""))
        if self.api_base and "@" in self.api_base:  # user:password@host: the URL is shown masked instead
            found += [self.api_base, self.api_base.split("://", 1)[-1].rsplit("@", 1)[0]]
        return found

    def _scrub(self, exc: BaseException) -> str:
        text = str(exc)
        if not text and isinstance(exc, TimeoutError):
            text = f"no answer within {self.timeout_s:g}s"
        text = text or type(exc).__name__
        if type(exc).__name__ not in text:
            text = f"{type(exc).__name__}: {text}"
        if self.api_base and self.api_base in text:
            text = text.replace(self.api_base, mask_url(self.api_base))
        text = scrub(text, self._secrets())
        return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "..."

    def _supports_seed(self, litellm: Any) -> bool:
        """Some providers reject ``seed`` outright (Anthropic): omit it there rather than fail."""
        if self._seed_supported is None:
            try:
                _, provider, _, _ = litellm.get_llm_provider(self.model, api_base=self.api_base)
                supported = litellm.get_supported_openai_params(
                    model=self.model, custom_llm_provider=provider
                )
                self._seed_supported = supported is None or "seed" in supported
            except Exception:  # unknown provider: let the provider decide
                self._seed_supported = True
        return self._seed_supported

    def _request(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """What is asked of LiteLLM, less the seed and the key: built without LiteLLM, so that a
        response cache hit neither imports it nor needs the key."""
        kwargs: dict[str, Any] = {"timeout": self.timeout_s, **self.params}
        kwargs.update(model=self.model, messages=wire_messages(messages), num_retries=0, max_retries=0)
        if tools:
            # Handed over as they are: LiteLLM 1.110 copies what it rewrites, for every provider
            # tests/test_llm_client.py checks (a copy per call cost 40 µs for the demo's 10 tools).
            kwargs["tools"] = tools
            kwargs.setdefault("tool_choice", "auto")  # OpenAI's default; some servers ignore tools without it
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
            per_token = {
                side: self.price[side] / 1_000_000
                if self.price and side in self.price
                else _PLACEHOLDER_PRICE_PER_TOKEN
                for side in ("input", "output")
            }
            kwargs.setdefault("input_cost_per_token", per_token["input"])
            kwargs.setdefault("output_cost_per_token", per_token["output"])
        return kwargs

    def _kwargs(
        self,
        litellm: Any,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        seed: int | None,
        request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The whole ``acompletion`` call: ``request`` (built here when not given), the seed where
        the provider takes one, and the key read now from ``api_key_env``."""
        kwargs = dict(request) if request is not None else self._request(messages, tools)
        if seed is not None and self._supports_seed(litellm):
            kwargs["seed"] = seed
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ModelError(
                    ModelErrorKind.AUTH,
                    f"environment variable {self.api_key_env} is not set: set {self.api_key_env}",
                    role=self.role,
                    model=self.model,
                )
            kwargs["api_key"] = key
        return kwargs

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, seed: int | None = None
    ) -> ChatResult:
        request = self._request(messages, tools)
        key = None
        if self.cache is not None:  # the seed and the role are part of the key; the API key never is
            key = request_key(
                cache_key_request(self.model, self.api_base, request), seed=seed, role=self.role
            )
            hit = self.cache.get(self.model, key)
            if hit is not None:
                return hit
        litellm = load_litellm()
        kwargs = self._kwargs(litellm, messages, tools, seed, request)
        stats = RetryStats()
        queued = 0.0
        start = time.perf_counter()

        async def attempt() -> Any:
            nonlocal queued
            if self.limiter is None:
                async with asyncio.timeout(self.timeout_s):
                    with unlogged(litellm):
                        return await litellm.acompletion(**kwargs)
            async with self.limiter.slot(self.model) as waited:
                queued += waited
                async with asyncio.timeout(self.timeout_s):
                    with unlogged(litellm):
                        return await litellm.acompletion(**kwargs)

        try:
            response = await call_with_retries(attempt, self.retry_policy, stats, describe=self._scrub)
        except Exception as exc:
            failed = settled(exc, stats, self._scrub)
            if failed is None:
                raise  # not a provider error: a bug, keep its traceback
            kind, message = failed
            usage = Usage(
                latency_s=max(0.0, time.perf_counter() - start - queued),
                retries=stats.retries,
                retry_wait_s=stats.waited_s,
            )
            if kind is ModelErrorKind.UNREACHABLE:
                message = f"{self._endpoint()} never answered ({message})"
            elif kind is ModelErrorKind.AUTH:
                message = f"{message} — {self._credential_hint(litellm)}"
            elif kind.permanent and self.api_base:
                message = f"{message} (endpoint {self._endpoint()})"
            error = ModelError(kind, message, role=self.role, model=self.model, usage=usage)
            log.info("%s", error.describe())
            if scrub(str(exc), self._secrets()) != str(exc):  # it held a secret: do not chain it
                raise error from None
            raise error from exc
        latency = max(0.0, time.perf_counter() - start - queued)
        result = parse_response(
            response,
            model=self.model,
            usage_extra=Usage(latency_s=latency, retries=stats.retries, retry_wait_s=stats.waited_s),
            litellm=litellm,
        )
        if self.price is not None or self.api_base is not None:
            result.usage = result.usage.model_copy(update={"cost_usd": self._own_price(result.usage)})
        if key is not None and self.cache is not None:
            self.cache.put(self.model, key, result, role=self.role)
        return result

    def _own_price(self, usage: Usage) -> float | None:
        """The user's stated price, or None: behind an ``api_base`` a model name says nothing of its
        price (a local server may serve any weights under ``openai/gpt-4o-mini``)."""
        if self.price is None or usage.input_tokens is None or usage.output_tokens is None:
            return None
        return cost_usd(
            (
                usage.input_tokens * self.price.get("input", 0.0)
                + usage.output_tokens * self.price.get("output", 0.0)
            )
            / 1_000_000
        )

    def _endpoint(self) -> str:
        return mask_url(self.api_base) if self.api_base else f"the {self.model.split('/', 1)[0]} provider"

    def _credential_hint(self, litellm: Any) -> str:
        """What to set, in words: the configured variable, or the ones LiteLLM looks for."""
        if self.api_key_env:
            if os.environ.get(self.api_key_env):
                return f"the key in {self.api_key_env} was rejected"
            return f"set {self.api_key_env}"
        try:
            missing = list(
                litellm.validate_environment(self.model, api_base=self.api_base).get("missing_keys") or []
            )
        except Exception:  # an unknown provider: LiteLLM cannot say which variable it reads
            missing = []
        if missing:
            local = (
                " (a local server accepts any value; or name the variable with api_key_env)"
                if self.api_base
                else ""
            )
            return f"set {' or '.join(missing)}{local}"
        return "the provider rejected the credential: check the key and its permissions"


# ---------------------------------------------------------------------- parsing


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (a provider's undecodable bytes, or a ``\\udXXX`` JSON escape)
    replaced by U+FFFD, as any UTF-8 decoder would: such text cannot be written as UTF-8 later.
    NUL bytes and every other character are kept: the transcript records what the model said."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def wire_messages(messages: list[Message]) -> list[Message]:
    """Messages as strict OpenAI-compatible servers accept them: every message has a string
    ``content`` (an assistant message with tool calls gets ``""``, not None: LiteLLM drops a None
    and llama.cpp's chat templates then fail), and text UTF-8 cannot encode (lone surrogates) is
    replaced first, so a request never fails locally. Messages needing no change are not copied."""
    out: list[Message] | None = None
    for i, message in enumerate(messages):
        fixed = _wire_message(message)
        if fixed is not message and out is None:
            out = list(messages[:i])
        if out is not None:
            out.append(fixed)
    return messages if out is None else out


def _wire_message(message: Message) -> Message:
    content = message.get("content")
    changes: dict[str, Any] = {}
    if content is None:
        changes["content"] = ""
    elif isinstance(content, str) and _SURROGATE.search(content):
        changes["content"] = clean_text(content)
    elif isinstance(content, list):
        parts = [_clean_part(p) for p in content]
        if any(a is not b for a, b in zip(parts, content)):
            changes["content"] = parts
    calls = message.get("tool_calls")
    if calls and any(_SURROGATE.search(json.dumps(c, ensure_ascii=False, default=str)) for c in calls):
        changes["tool_calls"] = _clean_json(calls)
    return {**message, **changes} if changes else message


def _clean_part(part: Any) -> Any:
    if isinstance(part, dict) and isinstance(part.get("text"), str) and _SURROGATE.search(part["text"]):
        return {**part, "text": clean_text(part["text"])}
    return part


def _clean_json(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {k: _clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_json(v) for v in value]
    return value


def _text(content: Any) -> str | None:
    if isinstance(content, list):  # content parts
        content = "".join(str(_get(p, "text") or "") for p in content)
    return clean_text(content) if isinstance(content, str) and content != "" else None


def _arguments(raw: Any) -> str:
    if raw is None:
        return ""
    return clean_text(raw) if isinstance(raw, str) else json.dumps(raw)


_UNPRICED: set[str] = set()  # models completion_cost cannot price: asking again costs ~0.7 ms a call


def _cost(response: Any, model: str, litellm: Any) -> float | None:
    """LiteLLM already priced the response while logging it (``response_cost``); price it here
    only when it did not, and remember models it cannot price. Unknown is None, never 0."""
    hidden = getattr(response, "_hidden_params", None) or {}
    value = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if value is None and model not in _UNPRICED:
        try:
            value = litellm.completion_cost(completion_response=response, model=model)
        except Exception:  # unpriced or custom model
            _UNPRICED.add(model)
    return cost_usd(value)  # None: unpriced, or a figure no call can cost


def _usage(response: Any, model: str, litellm: Any) -> Usage:
    usage = _get(response, "usage")
    input_tokens = token_count(_get(usage, "prompt_tokens"))  # None: absent or not a plausible count
    output_tokens = token_count(_get(usage, "completion_tokens"))
    cached = _get(_get(usage, "prompt_tokens_details"), "cached_tokens")
    if cached is None:
        cached = _get(usage, "cache_read_input_tokens")
    cost: float | None = None
    if usage is not None and input_tokens is not None and output_tokens is not None:
        cost = _cost(response, model, litellm)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=token_count(cached),
        cost_usd=cost,
    )


def parse_response(
    response: Any, *, model: str, usage_extra: Usage | None = None, litellm: Any = None
) -> ChatResult:
    """A LiteLLM ``ModelResponse`` (or its dict form) as a ``ChatResult``."""
    litellm = litellm or load_litellm()
    choices = _get(response, "choices") or []
    choice = choices[0] if choices else None
    message = _get(choice, "message")
    calls: list[ToolCallRequest] = []
    for i, call in enumerate(_get(message, "tool_calls") or []):
        function = _get(call, "function")
        name = clean_text(str(_get(function, "name") or ""))
        calls.append(
            ToolCallRequest(
                id=_get(call, "id") or f"call_{i}",
                name=name,
                arguments=_arguments(_get(function, "arguments")),
            )
        )
    legacy = _get(message, "function_call")
    if not calls and legacy is not None and _get(legacy, "name"):
        calls.append(
            ToolCallRequest(
                id="call_0", name=_get(legacy, "name"), arguments=_arguments(_get(legacy, "arguments"))
            )
        )
    usage = _usage(response, model, litellm)
    if usage_extra is not None:
        usage = usage.model_copy(
            update={
                "latency_s": usage_extra.latency_s,
                "retries": usage_extra.retries,
                "retry_wait_s": usage_extra.retry_wait_s,
            }
        )
    return ChatResult(
        text=_text(_get(message, "content")),
        tool_calls=calls,
        usage=usage,
        model=model,
        finish_reason=_get(choice, "finish_reason"),
    )


def make_model(ref: str, *, role: str, **settings: Any) -> LiteLLMModel:
    """``LiteLLMModel(ref, role=role, **settings)``; ``simlab-fake/<name>`` refs need ``register_fake``."""
    if ref.startswith("simlab-fake/"):
        from simlab.llm.fakes import register_fake_provider

        register_fake_provider()
    return LiteLLMModel(ref, role=role, **settings)
