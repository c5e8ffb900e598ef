"""The benches' OpenAI-compatible fake server (``bench/fake_server.py``) speaks the protocol LiteLLM
expects: a real server on 127.0.0.1, started and stopped here, called through ``LiteLLMModel``.
Not a timed test: the benches measure; this checks that what they measure is the real path."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from simlab.llm import LiteLLMModel

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture
def server_url() -> Iterator[str]:
    sys.path.insert(0, str(BENCH))
    try:
        from fake_server import start_server

        proc, url = start_server(0.0)
    finally:
        sys.path.remove(str(BENCH))
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_the_bench_agent_calls_a_tool_then_answers_over_http(server_url: str, monkeypatch) -> None:
    monkeypatch.setenv("BENCH_KEY", "anything")
    model = LiteLLMModel("openai/bench-agent", role="agent", api_base=server_url, api_key_env="BENCH_KEY")
    tools = [{"type": "function", "function": {"name": "search_help_center", "description": "Search",
                                               "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
    first = await model.chat([{"role": "user", "content": "when do I get my refund?"}], tools=tools, seed=1)
    assert [c.name for c in first.tool_calls] == ["search_help_center"] and first.text is None
    assert first.usage.input_tokens and first.usage.output_tokens
    assert first.usage.cost_usd is None  # behind an api_base, no price unless stated
    call = first.tool_calls[0]
    history = [{"role": "user", "content": "when do I get my refund?"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]},
               {"role": "tool", "tool_call_id": call.id, "content": "{\"results\": []}"}]
    second = await model.chat(history, tools=tools, seed=1)
    assert second.text and "refund" in second.text and not second.tool_calls


async def test_the_bench_user_stops_on_its_third_reply(server_url: str, monkeypatch) -> None:
    monkeypatch.setenv("BENCH_KEY", "anything")
    model = LiteLLMModel("openai/bench-user", role="simulator", api_base=server_url, api_key_env="BENCH_KEY")
    own = [{"role": "assistant", "content": "hi"}] * 3
    assert "###STOP###" in (await model.chat([{"role": "user", "content": "x"}, *own])).text
    assert "###STOP###" not in (await model.chat([{"role": "user", "content": "x"}])).text


async def test_where_search_help_center_is_not_offered_the_agent_calls_an_offered_tool_without_arguments(
        server_url: str, monkeypatch) -> None:
    """Another framework's domain (τ²-bench's retail, ``bench_tau2.py``): the conversation keeps its
    shape, with a tool that domain has and that needs no arguments."""
    monkeypatch.setenv("BENCH_KEY", "anything")
    model = LiteLLMModel("openai/bench-agent", role="agent", api_base=server_url, api_key_env="BENCH_KEY")
    tools = [{"type": "function", "function": {"name": "get_order_details", "description": "An order",
                                               "parameters": {"type": "object", "required": ["order_id"],
                                                              "properties": {"order_id": {"type": "string"}}}}},
             {"type": "function", "function": {"name": "list_all_product_types", "description": "Products",
                                               "parameters": {"type": "object", "properties": {}}}}]
    first = await model.chat([{"role": "user", "content": "when do I get my refund?"}], tools=tools)
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [("list_all_product_types", {})]


async def test_the_server_counts_the_completions_it_answered(server_url: str, monkeypatch) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from fake_server import answered
    finally:
        sys.path.remove(str(BENCH))
    monkeypatch.setenv("BENCH_KEY", "anything")
    model = LiteLLMModel("openai/bench-user", role="simulator", api_base=server_url, api_key_env="BENCH_KEY")
    before = answered(server_url)
    for _ in range(3):
        await model.chat([{"role": "user", "content": "x"}])
    assert answered(server_url) - before == 3
