"""LiteLLMModel through the real litellm.acompletion path: custom fake provider and mock_response."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from simlab.llm import (
    ChatModel,
    LiteLLMModel,
    ModelError,
    ModelErrorKind,
    ModelLimiter,
    make_model,
    register_fake,
    register_fake_provider,
)
from simlab.transcript import Pin

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
                                           "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
HELLO = [{"role": "user", "content": "Hello, where is my order A123?"}]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


async def test_text_reply_through_litellm_custom_provider() -> None:
    seen: dict[str, Any] = {}

    def fn(messages: list[dict[str, Any]], tools: Any, **kwargs: Any) -> str:
        seen.update(messages=messages, tools=tools, **kwargs)
        return "Your order ships tomorrow."

    model = LiteLLMModel(register_fake("text", fn), role="agent", temperature=0.3)
    assert isinstance(model, ChatModel)
    result = await model.chat(HELLO, seed=7)
    assert result.text == "Your order ships tomorrow."
    assert result.tool_calls == []
    assert result.finish_reason == "stop"
    assert result.model == "simlab-fake/text"
    assert seen["messages"][0]["content"] == HELLO[0]["content"]
    assert seen["tools"] is None
    assert seen["temperature"] == 0.3 and seen["seed"] == 7
    u = result.usage
    assert u.input_tokens == 8 and u.output_tokens == 7  # ceil(chars / 4), filled by the fake
    assert u.cached_tokens is None  # the provider did not say
    assert u.cost_usd is None  # custom model: price unknown, not 0
    assert u.retries == 0 and u.retry_wait_s == 0.0 and u.latency_s >= 0.0


async def test_tool_calls_come_through_with_raw_arguments() -> None:
    def fn(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
        assert tools == TOOLS
        return {"text": "", "tool_calls": [
            {"id": "call_a", "name": "lookup_order", "arguments": {"order_id": "A123"}},
            {"name": "lookup_order", "arguments": "{not json"},
        ]}

    result = await LiteLLMModel(register_fake("tools", fn), role="agent").chat(HELLO, tools=TOOLS)
    assert result.text is None  # empty text is no text
    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_a", "lookup_order"), ("call_0_1", "lookup_order")]
    assert json.loads(result.tool_calls[0].arguments) == {"order_id": "A123"}
    assert result.tool_calls[1].arguments == "{not json"  # raw text kept, even when invalid


async def test_async_fake_and_cached_tokens_reported() -> None:
    async def fn(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
        return {"text": "ok", "cached_tokens": 0, "usage": {"input_tokens": 100, "output_tokens": 5}}

    result = await LiteLLMModel(register_fake("cached", fn), role="simulator").chat(HELLO)
    assert result.usage.input_tokens == 100 and result.usage.output_tokens == 5
    assert result.usage.cached_tokens == 0  # the provider said 0: keep it


async def test_mock_response_text_and_known_price() -> None:
    model = LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", params={"mock_response": "Hi there"})
    result = await model.chat(HELLO, seed=1)
    assert result.text == "Hi there"
    assert result.usage.input_tokens is not None and result.usage.output_tokens is not None
    assert isinstance(result.usage.cost_usd, float) and result.usage.cost_usd > 0  # bundled price map


async def test_mock_response_unknown_model_has_no_cost() -> None:
    model = LiteLLMModel("openai/my-inhouse-model", role="agent", api_base="http://127.0.0.1:9/v1",
                         params={"mock_response": "hey"})
    result = await model.chat(HELLO)
    assert result.text == "hey"
    assert result.usage.cost_usd is None


async def test_mock_response_tool_calls() -> None:
    params = {"mock_response": "", "mock_tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'}}]}
    result = await LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", params=params).chat(HELLO, tools=TOOLS)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("t1", "lookup_order", '{"order_id": "A1"}')]


async def test_mock_response_dict_without_usage_keeps_tokens_unknown() -> None:
    reply = {"model": "x", "choices": [{"message": {"role": "assistant", "content": "no usage here"}}]}
    result = await LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent",
                                params={"mock_response": reply}).chat(HELLO)
    assert result.text == "no usage here"
    assert result.usage.input_tokens is None and result.usage.output_tokens is None
    assert result.usage.cost_usd is None


async def test_litellm_retries_are_off_and_key_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    captured: dict[str, Any] = {}
    real = litellm.acompletion

    async def spy(**kwargs: Any) -> Any:
        captured.update(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    monkeypatch.setenv("SIMLAB_TEST_KEY", "sk-first-value-123")
    model = LiteLLMModel(register_fake("kw", lambda m, t: "ok"), role="agent", api_key_env="SIMLAB_TEST_KEY",
                         timeout_s=12.5, params={"max_tokens": 64})
    monkeypatch.setenv("SIMLAB_TEST_KEY", "sk-second-value-456")
    await model.chat(HELLO)
    assert captured["num_retries"] == 0 and captured["max_retries"] == 0
    assert captured["timeout"] == 12.5 and captured["max_tokens"] == 64
    assert captured["api_key"] == "sk-second-value-456"
    assert "tools" not in captured and "seed" not in captured and "temperature" not in captured


async def test_seed_omitted_for_providers_that_reject_it(monkeypatch: pytest.MonkeyPatch) -> None:
    model = LiteLLMModel("anthropic/claude-3-5-sonnet-20241022", role="simulator", params={"mock_response": "ok"})
    result = await model.chat(HELLO, seed=42)  # Anthropic raises UnsupportedParamsError on seed
    assert result.text == "ok"


def test_pin_has_settings_but_never_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMLAB_TEST_KEY", "sk-live-supersecret-999")
    model = LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", api_key_env="SIMLAB_TEST_KEY",
                         api_base="https://llm.example.com/v1", temperature=0.0,
                         params={"max_tokens": 300, "extra_headers": {"Authorization": "Bearer abcdefghijkl", "X-Team": "qa"},
                                 "aws_secret_access_key": "AKIAXXXXSECRET"})
    pin = model.pin()
    assert pin == Pin(kind="llm", ref="openai/gpt-4o-2024-08-06", settings={
        "temperature": 0.0, "api_base": "https://llm.example.com/v1", "max_tokens": 300,
        "extra_headers": {"X-Team": "qa"}})
    dumped = pin.model_dump_json() + repr(model)
    for secret in ("sk-live-supersecret-999", "abcdefghijkl", "AKIAXXXXSECRET"):
        assert secret not in dumped


def test_params_may_not_override_what_simlab_controls() -> None:
    with pytest.raises(ValueError, match="api_key_env"):
        LiteLLMModel("openai/gpt-4o", role="agent", params={"api_key": "sk-nope"})
    with pytest.raises(ValueError, match="num_retries"):
        LiteLLMModel("openai/gpt-4o", role="agent", params={"num_retries": 3})


async def test_api_key_never_in_error_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    key = "sk-proj-abcdef1234567890"
    monkeypatch.setenv("SIMLAB_TEST_KEY", key)

    def fn(messages: Any, tools: Any) -> str:
        raise litellm.AuthenticationError(
            message=f"Incorrect API key provided: {key}. Authorization: Bearer {key}",
            llm_provider="simlab-fake", model="leaky")

    model = LiteLLMModel(register_fake("leaky", fn), role="agent", api_key_env="SIMLAB_TEST_KEY")
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    err = info.value
    assert err.kind is ModelErrorKind.AUTH
    assert key not in str(err) and key not in err.describe()
    assert "AuthenticationError" in str(err)
    assert err.__cause__ is None and err.__suppress_context__  # the leaky original is not chained


async def test_missing_key_env_is_an_auth_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMLAB_ABSENT_KEY", raising=False)
    model = LiteLLMModel(register_fake("nokey", lambda m, t: "ok"), role="judge", api_key_env="SIMLAB_ABSENT_KEY")
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    assert info.value.kind is ModelErrorKind.AUTH and "SIMLAB_ABSENT_KEY" in str(info.value)
    assert info.value.describe().startswith("judge model simlab-fake/nokey: auth:")


async def test_unknown_fake_name_is_not_found() -> None:
    register_fake_provider()
    with pytest.raises(ModelError) as info:
        await LiteLLMModel("simlab-fake/never-registered", role="agent").chat(HELLO)
    assert info.value.kind is ModelErrorKind.NOT_FOUND


async def test_bug_in_fake_fails_fast_as_bad_request(llm_sleeps: list[float]) -> None:
    def fn(messages: Any, tools: Any) -> str:
        raise KeyError("oops")

    with pytest.raises(ModelError) as info:
        await LiteLLMModel(register_fake("buggy", fn), role="agent").chat(HELLO)
    assert info.value.kind is ModelErrorKind.BAD_REQUEST and "KeyError" in str(info.value)
    assert llm_sleeps == []


def test_register_fake_provider_is_idempotent() -> None:
    import litellm

    register_fake_provider()
    register_fake_provider()
    register_fake("twice", lambda m, t: "a")
    register_fake("twice", lambda m, t: "b")
    assert sum(1 for e in litellm.custom_provider_map if e["provider"] == "simlab-fake") == 1


async def test_make_model_builds_a_litellm_model() -> None:
    register_fake("made", lambda m, t: "made it")
    model = make_model("simlab-fake/made", role="simulator", temperature=0.0, max_retries=1)
    assert isinstance(model, LiteLLMModel) and model.role == "simulator"
    assert model.retry_policy.max_retries == 1
    assert (await model.chat(HELLO)).text == "made it"


async def test_limiter_is_used_around_attempts() -> None:
    limiter = ModelLimiter({"simlab-fake/limited": 1})
    model = LiteLLMModel(register_fake("limited", lambda m, t: "ok"), role="agent", limiter=limiter)
    await model.chat(HELLO)
    assert limiter.peak["simlab-fake/limited"] == 1 and limiter.in_flight["simlab-fake/limited"] == 0


async def test_secrets_never_reach_the_logs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import litellm

    key = "sk-log-leak-0987654321"
    monkeypatch.setenv("SIMLAB_TEST_KEY", key)
    fn_calls = {"n": 0}

    def fn(messages: Any, tools: Any) -> str:
        fn_calls["n"] += 1
        raise litellm.InternalServerError(message=f"upstream echoed key={key}", llm_provider="simlab-fake", model="m")

    caplog.set_level("DEBUG")
    model = LiteLLMModel(register_fake("log-leak", fn), role="agent", api_key_env="SIMLAB_TEST_KEY", max_retries=2)
    with pytest.raises(ModelError) as info:
        await model.chat(HELLO)
    assert fn_calls["n"] == 3 and "retry 2" in caplog.text
    assert key not in caplog.text and key not in str(info.value)


def test_parse_response_dict_shapes() -> None:
    from simlab.llm import parse_response

    response = {
        "choices": [{"finish_reason": "stop", "message": {
            "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "world"}],
            "function_call": {"name": "legacy_fn", "arguments": {"a": 1}}}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 4, "cache_read_input_tokens": 12},
    }
    result = parse_response(response, model="custom/thing")
    assert result.text == "Hello world"
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("legacy_fn", {"a": 1})]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cached_tokens) == (20, 4, 12)
    assert result.usage.cost_usd is None and result.model == "custom/thing"
    empty = parse_response({"choices": []}, model="x")
    assert empty.text is None and empty.tool_calls == [] and empty.usage.input_tokens is None


# ------------------------------------------------------------------ LiteLLM's per-call work

# Tools with what providers rewrite: $defs/$ref, additionalProperties, title, default, format,
# anyOf with null, enum, strict.
RICH_TOOLS = TOOLS + [{"type": "function", "function": {"name": "rich", "description": "d", "strict": True, "parameters": {
    "type": "object", "title": "Rich", "additionalProperties": False,
    "$defs": {"Item": {"type": "object", "title": "Item", "required": ["sku"],
                       "properties": {"sku": {"type": "string", "format": "uuid", "default": "x"}}}},
    "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                   "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                   "kind": {"type": "string", "enum": ["a", "b"]}},
    "required": ["items"]}}}]


@pytest.mark.parametrize("ref", ["openai/gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620", "gemini/gemini-1.5-pro",
                                 "mistral/mistral-large-latest", "ollama_chat/llama3", "cohere_chat/command-r",
                                 "hosted_vllm/my-model", "groq/llama3-70b-8192"])
async def test_litellm_leaves_the_tools_it_is_given_unchanged(ref: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client hands each trial's tool list to LiteLLM without a copy: a LiteLLM that starts
    rewriting tools in place for a provider must fail here (the request is built, then the
    connection is refused by the no-network guard)."""
    import copy

    monkeypatch.setenv("SIMLAB_TEST_KEY", "sk-test")
    tools = copy.deepcopy(RICH_TOOLS)
    model = LiteLLMModel(ref, role="agent", api_key_env="SIMLAB_TEST_KEY", api_base="http://127.0.0.1:9",
                         max_retries=0, timeout_s=5)
    with pytest.raises(ModelError):
        await model.chat(HELLO, tools=tools)
    assert tools == RICH_TOOLS


async def test_a_registered_litellm_callback_still_sees_every_call() -> None:
    """simlab skips LiteLLM's logging of a call only when nothing listens: a user's logger
    (Langfuse, a custom one) keeps getting its events, with the cost."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    seen: list[Any] = []

    class Logger(CustomLogger):
        async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
            seen.append(kwargs.get("response_cost"))

    from simlab.llm.lazy import _CALLBACK_LISTS

    before = {name: list(getattr(litellm, name)) for name in _CALLBACK_LISTS}
    logger = Logger()
    litellm.callbacks = [logger]
    try:
        model = LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", params={"mock_response": "Hi there"})
        result = await model.chat(HELLO)
        for _ in range(100):  # LiteLLM logs in a task of its own
            if seen:
                break
            await asyncio.sleep(0)
    finally:  # LiteLLM spreads a callback over its other lists
        for name, value in before.items():
            setattr(litellm, name, value)
    assert seen and seen[0] == result.usage.cost_usd and result.usage.cost_usd


async def test_litellm_logging_is_skipped_when_nothing_listens_and_the_cost_is_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    from simlab.llm.lazy import listened

    assert not listened(litellm), {n: getattr(litellm, n, None) for n in ("cache", "callbacks", "success_callback", "failure_callback", "_async_success_callback", "_async_failure_callback", "input_callback", "service_callback")}
    handled: list[str] = []
    from litellm.litellm_core_utils.litellm_logging import Logging

    real = Logging.async_success_handler

    async def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        handled.append("success")
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(Logging, "async_success_handler", spy)
    result = await LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent",
                                params={"mock_response": "Hi there"}).chat(HELLO)
    for _ in range(100):
        await asyncio.sleep(0)
    assert handled == []
    assert isinstance(result.usage.cost_usd, float) and result.usage.cost_usd > 0
    # outside simlab's call, LiteLLM logs as usual
    await litellm.acompletion(model="openai/gpt-4o-2024-08-06", messages=HELLO, mock_response="x")
    for _ in range(100):
        if handled:
            break
        await asyncio.sleep(0)
    assert handled == ["success"]


async def test_behind_an_api_base_litellm_is_told_a_price_that_is_never_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    captured: list[dict[str, Any]] = []
    real = litellm.acompletion

    async def spy(**kwargs: Any) -> Any:
        captured.append(dict(kwargs))
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    unpriced = LiteLLMModel("openai/my-inhouse-model", role="agent", api_base="http://127.0.0.1:9/v1",
                            params={"mock_response": "hey"})
    assert (await unpriced.chat(HELLO)).usage.cost_usd is None
    priced = LiteLLMModel("openai/my-inhouse-model", role="agent", api_base="http://127.0.0.1:9/v1",
                          params={"mock_response": "hey"}, price={"input": 2.0, "output": 8.0})
    usage = (await priced.chat(HELLO)).usage
    assert usage.input_tokens and usage.output_tokens
    assert usage.cost_usd == pytest.approx((usage.input_tokens * 2.0 + usage.output_tokens * 8.0) / 1e6)
    assert captured[0]["input_cost_per_token"] > 0 and captured[1]["input_cost_per_token"] == 2.0 / 1e6
    assert captured[1]["output_cost_per_token"] == 8.0 / 1e6
    direct = LiteLLMModel("openai/gpt-4o-2024-08-06", role="agent", params={"mock_response": "hey"})
    await direct.chat(HELLO)
    assert "input_cost_per_token" not in captured[2]  # a provider's own price stays LiteLLM's
