"""A scenario's ``history:``: the trial starts mid-conversation. Its calls run on the initial
state, agents and simulators see it, graders see it as history (turn 0), efficiency leaves it out
unless asked, validation checks its calls against the domain."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from simlab.graders.base import GradeContext
from simlab.graders.grade import grade_deterministic
from simlab.llm.types import ChatResult, Usage
from simlab.sim.agents import LLMAgent, PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.specs import Scenario
from simlab.transcript import AgentMessage, ErrorEvent, ToolCall, ToolResult, UserMessage
from tests.support import KV, PERSONA, make_trial, scenario

HISTORY = [
    {"user": "Hi, what is stored under a?"},
    {"tool": "get_item", "args": {"key": "a"}},
    {"agent": "a holds 1."},
    {"user": "Then set c to 3."},
    {"tool": "set_item", "args": {"key": "c", "value": "3"}},
    {"agent": "c is 3 now. Anything else?"},
]


def with_history(**overrides: Any) -> Scenario:
    return scenario(history=HISTORY, **overrides)


def storing_agent(inp):
    inp.tools.call("set_item", key="b", value="2")
    return "Done: b is stored."


def play(scn: Scenario, agent: Any = None) -> Any:
    agent = agent or PythonAgent(storing_agent, "t:storing")
    return asyncio.run(run_trial(make_trial(agent, RulesSimulator(), scn=scn)))


def test_history_events_come_first_at_turn_zero_and_their_writes_hold():
    t = play(with_history())
    assert t.history_events == 8  # 2 + 2 (call, result) + 1 + 1 + 2
    history = t.events[:8]
    assert [e.type for e in history] == ["user", "tool_call", "tool_result", "agent", "user", "tool_call",
                                         "tool_result", "agent"]
    assert all(e.turn == 0 for e in history)
    assert history[2].result == {"key": "a", "value": "1"}  # what the tool returned on the initial state
    assert history[5].access == "write"
    assert all(e.turn >= 1 for e in t.events[8:])
    assert t.termination.reason.value == "goal_reached"
    assert t.final_state["items"] == {"a": "1", "b": "2", "c": "3"}  # the history's write held


def test_a_given_result_is_what_the_agent_saw():
    items = [{"tool": "get_item", "args": {"key": "a"}, "result": {"key": "a", "value": "one"}}]
    t = play(scenario(history=items))
    assert [e.result for e in t.events if isinstance(e, ToolResult)][0] == {"key": "a", "value": "one"}


def test_the_python_agent_sees_the_history_as_the_conversation_so_far():
    seen: list[Any] = []

    def agent(inp):
        seen.append((list(inp.messages), list(inp.history)))
        return storing_agent(inp)

    play(with_history(), PythonAgent(agent, "t:seeing"))
    messages, history = seen[0]
    assert [m["content"] for m in messages] == ["Hi, what is stored under a?", "a holds 1.", "Then set c to 3.",
                                                "c is 3 now. Anything else?", "Please store b=2."]
    roles = [m["role"] for m in history]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    assert history[1]["tool_calls"][0]["function"]["name"] == "get_item"
    assert history[2]["tool_call_id"] == history[1]["tool_calls"][0]["id"]


class RecordingChat:
    role = "agent"
    model = "fake/agent"

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def pin(self):
        from simlab.transcript import Pin

        return Pin(kind="llm", ref=self.model)

    async def chat(self, messages, *, tools=None, seed=None):
        self.calls.append([dict(m) for m in messages])
        return ChatResult("Done, b is stored.", [], Usage(input_tokens=1, output_tokens=1))


def test_the_llm_agent_gets_the_history_with_its_tool_calls():
    model = RecordingChat()
    play(with_history(), LLMAgent(model))
    first = model.calls[0]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant",
                                          "tool", "assistant", "user"]
    assert first[-1]["content"] == "Please store b=2."
    assert first[6]["tool_calls"][0]["function"]["name"] == "set_item"


def grade(t: Any, scn: Scenario) -> dict[str, Any]:
    checks = grade_deterministic(GradeContext(transcript=t, scenario=scn, domain=KV, persona=PERSONA))
    return {c.name: c for c in checks}


def test_a_rule_spans_history_and_live_turns():
    # the rule asks for a read before every write: the history's read covers the live write
    rule = {"rules": [{"before": ["get_item", "set_item"]}]}
    scn = with_history(expect=rule)
    checks = grade(play(scn), scn)
    assert checks["before(get_item, set_item)"].status == "pass"
    bare = scenario(expect=rule)
    checks = grade(play(bare), bare)
    assert checks["before(get_item, set_item)"].status == "fail"


def test_efficiency_counts_only_the_live_part_unless_asked():
    scn = with_history(expect={"budgets": {"max_tool_calls": 1}})
    t = play(scn)
    checks = grade(t, scn)
    assert checks["efficiency"].details["tool_calls"] == 1
    assert checks["efficiency"].details["user_turns"] == 2  # the opening and the stop, not the history's two
    assert checks["efficiency"].details["history_events_left_out"] == 8
    assert checks["efficiency"].details["first_action_event"] == 9  # into the whole transcript
    assert checks["budget:max_tool_calls"].status == "pass"
    counted = with_history(expect={"budgets": {"max_tool_calls": 1, "count_history": True}})
    checks = grade(t, counted)
    assert checks["efficiency"].details["tool_calls"] == 3
    assert checks["budget:max_tool_calls"].status == "fail"
    assert checks["budget:max_tool_calls"].event == 5  # the second call, the history's write, went over
    assert isinstance(t.events[5], ToolCall) and t.events[5].turn == 0


def test_the_expected_state_starts_from_the_history():
    scn = with_history(expect={"expected_actions": [{"tool": "set_item", "args": {"key": "b", "value": "2"}}]})
    assert grade(play(scn), scn)["expected_state"].status == "pass"


def test_a_failing_history_call_ends_the_trial_as_a_scenario_bug():
    scn = scenario(history=[{"tool": "get_item", "args": {"key": "zz"}}])
    t = play(scn)
    assert t.termination.reason.value == "error"
    assert "history[0]: get_item failed" in t.termination.detail
    assert isinstance(t.events[-1], ErrorEvent)


@pytest.mark.parametrize("item, message", [
    ({"user": "hi", "agent": "hello"}, "exactly one of user, agent or tool (got user, agent)"),
    ({}, "exactly one of user, agent or tool"),
    ({"user": "hi", "args": {"k": 1}}, "args and result belong to a tool step"),
])
def test_history_items_are_one_step_each(item, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        scenario(history=[item])


SCENARIO = """\
id: mid
title: Mid-conversation
domain: tests.support:KV
persona: {id: me, description: Me.}
user: {goal: Store b=2., opening: Please store b=2.}
history:
  - user: hello
  - tool: get_itemz
    args: {key: a}
  - tool: set_item
    args: {key: a, colour: red}
  - tool: set_item
    args: {key: a}
"""


def test_validation_checks_the_history_calls_against_the_domain(tmp_path: Path):
    from simlab.env.checks import check_scenarios
    from simlab.errors import SpecError
    from simlab.specs import load_scenarios

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    with pytest.raises(SpecError) as err:
        check_scenarios(load_scenarios([path], {}))
    found = [p.replace(f"{path}:", "s.yaml:") for p in err.value.problems]
    assert found[0] == ("s.yaml:8: history.1.tool: unknown tool 'get_itemz' in domain 'kv'; did you mean 'get_item'? "
                        "(tools: get_item, set_item, transfer_to_human)")
    assert found[1].startswith("s.yaml:11: history.2.args.colour: tool 'set_item' has no argument 'colour'")
    assert any(p.startswith("s.yaml:") and "history.3.args" in p and "value" in p for p in found[2:]), found


def test_validation_runs_the_history_on_the_initial_state(tmp_path: Path):
    from simlab.env.checks import check_scenarios
    from simlab.errors import SpecError
    from simlab.specs import load_scenarios

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.split("  - tool: get_itemz")[0] + "  - tool: get_item\n    args: {key: nope}\n")
    with pytest.raises(SpecError) as err:
        check_scenarios(load_scenarios([path], {}))
    assert [p.replace(f"{path}:", "s.yaml:") for p in err.value.problems] == [
        "s.yaml:8: history.1: get_item failed when run on the initial state: no item 'nope' "
        "(fix the call or the initial_state)"]
    path.write_text(SCENARIO.split("  - tool: get_itemz")[0] + "  - tool: get_item\n    args: {key: a}\n")
    assert check_scenarios(load_scenarios([path], {}))["mid"].name == "kv"


def test_user_and_agent_messages_keep_their_order():
    t = play(scenario(history=[{"agent": "Welcome back."}, {"user": "Hi"}]))
    assert isinstance(t.events[0], AgentMessage) and isinstance(t.events[1], UserMessage)
    assert t.history_events == 2


def test_the_drift_checks_judge_only_the_simulated_user():
    # the history's user states an id it was never given and accepts what its goal rejects: it was
    # written by the scenario's author, not simulated, so the drift checks leave it alone
    items = [{"user": "my ticket is ZX-981, and store credit is fine"}, {"agent": "We offer store credit."},
             {"user": "ok, store credit"}]
    scn = scenario(history=items, user={"goal": "Store b=2.", "opening": "Please store b=2.",
                                        "success_phrases": ["stored"], "reject_phrases": ["store credit"]})
    checks = grade(play(scn), scn)
    assert checks["drift:invented_identifier"].status == "pass"
    assert checks["drift:accepted_rejected"].status == "pass"
    live = scenario(user={"goal": "Store b=2.", "opening": "my ticket is ZX-981, store b=2.",
                          "success_phrases": ["stored"]})
    assert grade(play(live), live)["drift:invented_identifier"].status == "fail"  # the check itself still bites
