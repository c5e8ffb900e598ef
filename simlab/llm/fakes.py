"""Test doubles that walk real code paths.

``FunctionModel`` and ``ScriptedModel`` implement ``ChatModel`` directly (no LiteLLM at all) for
tests of the loop and graders. ``register_fake`` plugs a Python function in as a LiteLLM custom
provider, so ``LiteLLMModel("simlab-fake/<name>")`` goes through the real ``litellm.acompletion``,
simlab's parsing, usage and retry code; the function may raise LiteLLM exceptions to play a
failing provider.

A reply, in every double, is one of: a ``str`` (the text), a ``ChatResult``, or a dict
``{"text": ..., "tool_calls": [{"name": ..., "arguments": {...} or "raw json", "id": ...}],
"finish_reason": ..., "usage": {...}, "cost_usd": ...}``. Token counts are deterministic
(about four characters a token); cost stays None unless the reply gives one.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from simlab.llm.types import ChatResult, Message, ToolCallRequest
from simlab.transcript import Pin, Usage

Reply = str | ChatResult | dict[str, Any]
ReplyFn = Callable[..., Any]  # (messages, tools) -> Reply, sync or async

FAKE_PROVIDER = "simlab-fake"


def approx_tokens(text: str) -> int:
    """Deterministic token estimate: one token per four characters, at least one for non-empty."""
    return _tokens_of_length(len(text))


def _tokens_of_length(length: int) -> int:
    return math.ceil(length / 4)


def _messages_length(messages: list[Message]) -> int:
    """Characters of the messages' text and tool calls (as JSON): the input of ``approx_tokens``,
    counted without building the text (the whole history is counted on every call)."""
    length = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            length += len(content)
        elif content:
            length += len(json.dumps(content, default=str))
        for call in message.get("tool_calls") or ():
            length += len(json.dumps(call, default=str))
    return length


def normalize_reply(reply: Reply, messages: list[Message], *, model: str, call_index: int = 0) -> ChatResult:
    """Any accepted reply shape as a ``ChatResult`` with deterministic usage filled in."""
    if isinstance(reply, ChatResult):
        return reply
    if isinstance(reply, str):
        reply = {"text": reply}
    if not isinstance(reply, dict):
        raise TypeError(
            f"fake model {model}: a reply must be str, dict or ChatResult, got {type(reply).__name__}"
        )
    unknown = set(reply) - {"text", "tool_calls", "finish_reason", "usage", "cost_usd", "cached_tokens"}
    if unknown:
        raise TypeError(f"fake model {model}: unknown reply keys {sorted(unknown)}")
    calls = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(
            ToolCallRequest(id=call.get("id") or f"call_{call_index}_{i}", name=call["name"], arguments=raw)
        )
    text = reply.get("text") or None
    out_text = (text or "") + "".join(c.name + c.arguments for c in calls)
    usage = Usage(
        input_tokens=_tokens_of_length(_messages_length(messages)),  # approx_tokens of the joined text
        output_tokens=approx_tokens(out_text),
        cached_tokens=reply.get("cached_tokens"),
        cost_usd=reply.get("cost_usd"),
    )
    if reply.get("usage"):
        usage = usage.model_copy(update=dict(reply["usage"]))
    finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    return ChatResult(text=text, tool_calls=calls, usage=usage, model=model, finish_reason=finish)


async def _call(fn: ReplyFn, *args: Any, **kwargs: Any) -> Any:
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


def _accepted(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``fn`` can take: all of them if it has ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return kwargs
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in kwargs.items() if k in names}


def _named(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Only the keyword arguments ``fn`` names explicitly (``api_key``, ``headers``: what a provider
    would see, for fakes that play one echoing secrets back; never passed through ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    return {
        k: v for k, v in kwargs.items() if k in params and params[k].kind is not inspect.Parameter.VAR_KEYWORD
    }


def _fn_ref(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"


class FunctionModel:
    """A ``ChatModel`` whose replies come from ``fn(messages, tools)``; records every call."""

    def __init__(self, fn: ReplyFn, *, model: str = "fake/function", role: str = "agent"):
        self.fn = fn
        self.model = model
        self.role = role
        self.calls: list[dict[str, Any]] = []

    def pin(self) -> Pin:
        return Pin(kind="llm", ref=self.model, settings={"fake": "function", "fn": _fn_ref(self.fn)})

    async def chat(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, seed: int | None = None
    ) -> ChatResult:
        self.calls.append({"messages": list(messages), "tools": tools, "seed": seed})
        reply = await _call(self.fn, messages, tools)
        return normalize_reply(reply, messages, model=self.model, call_index=len(self.calls) - 1)


class ScriptExhaustedError(AssertionError):
    """A ``ScriptedModel`` was asked for more replies than its script holds."""


class ScriptedModel(FunctionModel):
    """Returns ``replies`` in order; an ``Exception`` in the script is raised instead of returned."""

    def __init__(
        self, replies: Iterable[Reply | BaseException], *, model: str = "fake/scripted", role: str = "agent"
    ):
        self.replies = list(replies)
        self._next = 0
        super().__init__(self._reply, model=model, role=role)

    def _reply(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> Reply:
        if self._next >= len(self.replies):
            raise ScriptExhaustedError(
                f"ScriptedModel {self.model} (role {self.role}) ran out of replies: "
                f"all {len(self.replies)} were used and call {self._next + 1} asked for another"
            )
        reply = self.replies[self._next]
        self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        return reply

    @property
    def remaining(self) -> int:
        return len(self.replies) - self._next

    def pin(self) -> Pin:
        return Pin(kind="scripted", ref=self.model, settings={"replies": len(self.replies)})


# ---------------------------------------------------------------------- LiteLLM custom provider

_FAKES: dict[str, ReplyFn] = {}
_handler: Any = None


def _model_response(result: ChatResult, model: str) -> Any:
    from simlab.llm.lazy import load_litellm

    litellm = load_litellm()
    message: dict[str, Any] = {"role": "assistant", "content": result.text}
    if result.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in result.tool_calls
        ]
    usage: dict[str, Any] = {}
    u = result.usage
    if u.input_tokens is not None and u.output_tokens is not None:
        usage = {
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
        }
        if u.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": u.cached_tokens}
    response = litellm.ModelResponse(
        model=model,
        choices=[{"index": 0, "finish_reason": result.finish_reason or "stop", "message": message}],
        **({"usage": usage} if usage else {}),
    )
    return response


def _make_handler() -> Any:
    from simlab.llm.lazy import load_litellm

    litellm = load_litellm()
    import openai

    class SimlabFakeProvider(litellm.CustomLLM):  # type: ignore[name-defined]
        """Routes ``simlab-fake/<name>`` to the function registered under ``<name>``."""

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[1] if model.startswith(FAKE_PROVIDER + "/") else model
            fn = _FAKES.get(name)
            if fn is None:
                raise litellm.NotFoundError(
                    message=f"no fake registered as {name!r}; call register_fake({name!r}, fn)",
                    model=model,
                    llm_provider=FAKE_PROVIDER,
                )
            optional = dict(kwargs.get("optional_params") or {})
            tools = optional.pop("tools", None)
            optional.pop("max_retries", None)
            seen = {"api_key": kwargs.get("api_key"), "headers": kwargs.get("headers")}
            try:
                reply = await _call(fn, messages, tools, **_accepted(fn, optional), **_named(fn, seen))
                return _model_response(normalize_reply(reply, messages, model=name), name)
            except openai.OpenAIError:
                raise  # a simulated provider fault: let LiteLLM and simlab classify it
            except TimeoutError as exc:
                raise litellm.Timeout(
                    message=f"fake {name} timed out", model=model, llm_provider=FAKE_PROVIDER
                ) from exc
            except Exception as exc:  # a bug in the fake: fail fast instead of being retried
                raise litellm.BadRequestError(
                    message=f"fake {name} raised {type(exc).__name__}: {exc}",
                    model=model,
                    llm_provider=FAKE_PROVIDER,
                ) from exc

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            import asyncio

            return asyncio.run(self.acompletion(model, messages, *args, **kwargs))

    return SimlabFakeProvider()


def register_fake_provider() -> None:
    """Add the ``simlab-fake`` provider to ``litellm.custom_provider_map`` (idempotent)."""
    global _handler
    from simlab.llm.lazy import load_litellm

    litellm = load_litellm()
    if _handler is None:
        _handler = _make_handler()
    entries = litellm.custom_provider_map
    if not any(e.get("provider") == FAKE_PROVIDER and e.get("custom_handler") is _handler for e in entries):
        litellm.custom_provider_map = [  # type: ignore[attr-defined]
            e for e in entries if e.get("provider") != FAKE_PROVIDER
        ] + [{"provider": FAKE_PROVIDER, "custom_handler": _handler}]


def register_fake(name: str, fn: ReplyFn) -> str:
    """Serve ``fn(messages, tools, **params)`` as ``simlab-fake/<name>``; returns that model string.

    Registering a name again replaces its function. ``fn`` may be sync or async, return any reply
    shape, or raise a LiteLLM exception (``litellm.RateLimitError``...) to simulate a fault. It also
    gets ``api_key`` and ``headers`` (what the provider would receive) when it names them.
    """
    if not name or "/" in name:
        raise ValueError(f"fake model name must be non-empty and without '/': {name!r}")
    register_fake_provider()
    _FAKES[name] = fn
    return f"{FAKE_PROVIDER}/{name}"


def unregister_fake(name: str) -> None:
    _FAKES.pop(name, None)
