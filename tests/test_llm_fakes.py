"""FunctionModel and ScriptedModel: simlab's own doubles, no LiteLLM involved."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simlab.llm import (
    ChatModel,
    ChatResult,
    FunctionModel,
    ModelError,
    ModelErrorKind,
    ScriptedModel,
    ScriptExhaustedError,
)
from simlab.transcript import Usage

HELLO = [{"role": "user", "content": "x" * 40}]


async def test_function_model_text_and_deterministic_usage() -> None:
    model = FunctionModel(lambda messages, tools: "twelve chars", role="simulator")
    assert isinstance(model, ChatModel)
    result = await model.chat(HELLO, seed=3)
    assert result.text == "twelve chars" and result.finish_reason == "stop"
    assert result.usage == Usage(input_tokens=10, output_tokens=3)  # cost None: unknown
    assert model.calls == [{"messages": HELLO, "tools": None, "seed": 3}]
    assert model.pin().kind == "llm" and model.pin().ref == "fake/function"


async def test_function_model_async_fn_with_tool_calls() -> None:
    async def fn(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
        return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}},
                               {"name": "broken", "arguments": "{oops", "id": "mine"}], "cost_usd": 0.002}

    result = await FunctionModel(fn).chat(HELLO, tools=[])
    assert result.text is None and result.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_0_0", "lookup_order"), ("mine", "broken")]
    assert json.loads(result.tool_calls[0].arguments) == {"order_id": "A1"}
    assert result.tool_calls[1].arguments == "{oops"
    assert result.usage.cost_usd == 0.002


async def test_function_model_passes_chat_result_through() -> None:
    given = ChatResult(text="as is", usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.0))
    assert await FunctionModel(lambda m, t: given).chat(HELLO) is given


async def test_function_model_rejects_unknown_shapes() -> None:
    with pytest.raises(TypeError, match="unknown reply keys"):
        await FunctionModel(lambda m, t: {"txt": "typo"}).chat(HELLO)
    with pytest.raises(TypeError, match="must be str, dict or ChatResult"):
        await FunctionModel(lambda m, t: 42).chat(HELLO)


async def test_scripted_model_in_order_then_clear_error() -> None:
    error = ModelError(ModelErrorKind.CONTEXT_WINDOW, "too long", role="agent", model="fake/scripted")
    model = ScriptedModel(["one", {"text": "two"}, error])
    assert (await model.chat(HELLO)).text == "one"
    assert (await model.chat(HELLO)).text == "two"
    with pytest.raises(ModelError):
        await model.chat(HELLO)
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match="ran out of replies: all 3 were used and call 4"):
        await model.chat(HELLO)
    assert model.pin().kind == "scripted"
