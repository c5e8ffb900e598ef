"""Every agent is bounded by default: a framework agent whose model never stops ends its trial as
``agent_loop`` at the framework's step limit (LangGraph's default of 10,007 supersteps is replaced
by simlab's 50 per turn), graded as the agent's failure, never a hang and never a crash."""

from __future__ import annotations

import pytest

from simlab.transcript import GraphStep, InvalidCall, ToolCall
from tests.framework_play import failed, play

FREE = {"input": 0, "output": 0}
RUNAWAYS = {
    "langgraph": ({"langgraph": "tests.runaway_agents:langgraph_unknown_tool", "price": FREE}, "recursion_limit 50"),
    "openai_agents": ({"openai_agents": "tests.runaway_agents:openai_agents_endless", "price": FREE},
                      "max_turns 10"),
    "pydantic_ai": ({"pydantic_ai": "tests.runaway_agents:pydantic_ai_endless", "price": FREE}, "request_limit 50"),
}


@pytest.mark.parametrize("kind", sorted(RUNAWAYS))
async def test_a_runaway_framework_agent_ends_as_a_loop_within_its_default_limit(kind: str) -> None:
    spec, limit = RUNAWAYS[kind]
    transcript, checks = await play("refund-damaged-card", spec)
    assert transcript.termination.reason.value == "agent_loop", transcript.termination
    assert limit in transcript.termination.detail
    assert transcript.termination.turn == 1
    assert "termination" in failed(checks)
    steps = sum(isinstance(e, GraphStep) for e in transcript.events)
    calls = sum(isinstance(e, ToolCall) for e in transcript.events)
    assert steps <= 50 and calls <= 50  # what the limits enforce, whatever the machine's speed


async def test_a_graph_given_max_steps_stops_there() -> None:
    spec = {"langgraph": "tests.runaway_agents:langgraph_unknown_tool", "price": FREE, "max_steps": 7}
    transcript, _ = await play("refund-damaged-card", spec)
    assert transcript.termination.reason.value == "agent_loop" and "recursion_limit 7" in transcript.termination.detail
    assert sum(isinstance(e, GraphStep) for e in transcript.events) <= 7


async def test_calls_the_graph_refused_itself_are_recorded_as_invalid_calls_and_a_repeat_is_a_loop() -> None:
    """LangGraph's ToolNode answers an unknown tool itself: simlab records the call as invalid, with
    the framework's message, so the loop check stops the third identical one."""
    spec = {"langgraph": "tests.runaway_agents:langgraph_unknown_tool_same", "price": FREE}
    transcript, checks = await play("refund-damaged-card", spec)
    assert transcript.termination.reason.value == "agent_loop"
    assert "no_such_tool called 3 times in a row" in transcript.termination.detail
    invalid = [e for e in transcript.events if isinstance(e, InvalidCall)]
    assert len(invalid) == 3 and all(e.name == "no_such_tool" for e in invalid)
    assert "not a valid tool" in invalid[0].reason and invalid[0].reason.startswith("the framework: ")
    calls = [e for e in transcript.events if isinstance(e, ToolCall)]
    assert [c.arguments for c in calls] == [{"order_id": "A123"}] * 3 and calls[0].call_id == invalid[0].call_id


async def test_calls_pydantic_ai_refused_itself_are_recorded_as_invalid_calls() -> None:
    spec = {"pydantic_ai": "tests.runaway_agents:pydantic_ai_bad_arguments", "price": FREE}
    transcript, _ = await play("refund-damaged-card", spec)
    invalid = [e for e in transcript.events if isinstance(e, InvalidCall)]
    assert [e.name for e in invalid][:2] == ["lookup_order", "no_such_tool"]
    assert all(e.reason.startswith("the framework: ") for e in invalid)
    assert "no_such_tool" in invalid[1].reason  # the framework's own words
    first = next(e for e in transcript.events if isinstance(e, ToolCall))
    assert first.name == "lookup_order" and first.arguments is None and first.raw_arguments == '{"order_id": A123'
