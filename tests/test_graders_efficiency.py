"""Efficiency counts, the termination check and budgets (unknown cost is not run, never passed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from simlab.graders.base import GradeContext, verdict_of
from simlab.graders.efficiency import efficiency_counts, grade_efficiency
from simlab.sim.agents import PythonAgent
from simlab.sim.loop import run_trial
from simlab.sim.simulators import RulesSimulator
from simlab.transcript import (
    AgentMessage,
    InvalidCall,
    ModelCall,
    Pin,
    Signal,
    Termination,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserMessage,
)
from tests.support import KV, kv_agent, make_trial, scenario

_ids = iter(range(1, 10_000))


def call(turn: int, name: str, args: dict[str, Any] | None, *, ok: bool = True, invalid: bool = False) -> list[Any]:
    cid = f"c{next(_ids)}"
    events: list[Any] = [ToolCall(turn=turn, call_id=cid, name=name, arguments=args, access="write")]
    if invalid:
        events.append(InvalidCall(turn=turn, call_id=cid, name=name, reason="bad"))
    events.append(ToolResult(turn=turn, call_id=cid, name=name, ok=ok and not invalid, error=None if ok else "no"))
    return events


def model(turn: int, role: str, *, tokens: int | None = 10, cost: float | None = 0.001, latency: float = 0.5,
          retries: int = 0, wait: float = 0.0) -> ModelCall:
    return ModelCall(turn=turn, role=role, model="m", usage=Usage(
        input_tokens=tokens, output_tokens=tokens, cached_tokens=0 if tokens is not None else None, cost_usd=cost,
        latency_s=latency, retries=retries, retry_wait_s=wait))


def transcript(events: list[Any], *, reason: str = "goal_reached", agent: str = "llm", simulator: str = "llm",
               duration: float = 3.0) -> Transcript:
    return Transcript(run_id="r", unit_id="kv-set#1", scenario_id="kv-set", persona_id="tester", domain="kv", trial=1,
                      seed=1, agent=Pin(kind=agent, ref="a"), simulator=Pin(kind=simulator, ref="s"), events=events,
                      termination=Termination(reason=reason, detail="why", turn=2), final_state={}, duration_s=duration)


def ctx_of(t: Transcript, budgets: dict[str, Any] | None = None) -> GradeContext:
    return GradeContext(t, scenario(expect={"budgets": budgets} if budgets else {}), KV)


def by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


def test_counts_turns_calls_errors_recoveries():
    events = [
        UserMessage(turn=1, text="hi"),
        *call(1, "get_item", {"key": "x"}, ok=False),
        *call(1, "get_item", {"key": "x"}, ok=False),
        *call(1, "get_item", {"key": "a"}),  # one recovery after two failures
        *call(1, "set_item", {"key": "b"}, invalid=True),
        *call(1, "set_item", {"key": "b", "value": "2"}),  # recovery after an invalid call
        AgentMessage(turn=1, text="done"),
        UserMessage(turn=2, text="thanks"),
        *call(2, "transfer_to_human", {"reason": "r"}, ok=False),  # an error never recovered
        AgentMessage(turn=2, text="bye"),
    ]
    counts = efficiency_counts(transcript(events))
    assert counts["user_turns"] == 2 and counts["agent_turns"] == 2
    assert counts["tool_calls"] == 6 and counts["invalid_calls"] == 1 and counts["tool_errors"] == 3
    assert counts["recoveries"] == 2
    assert counts["redundant_calls"] == 0  # the repeats followed errors: retries, not redundancy
    assert counts["loop"] is False


def test_redundant_calls_are_repeats_of_a_success_not_retries_after_an_error():
    success_then_repeat = [*call(1, "get_item", {"key": "a"}), *call(1, "get_item", {"key": "a"})]
    assert efficiency_counts(transcript(success_then_repeat))["redundant_calls"] == 1
    error_then_retry = [*call(1, "get_item", {"key": "a"}, ok=False), *call(1, "get_item", {"key": "a"})]
    assert efficiency_counts(transcript(error_then_retry))["redundant_calls"] == 0
    reordered_args = [*call(1, "set_item", {"key": "b", "value": "2"}), *call(2, "get_item", {"key": "b"}),
                      *call(2, "set_item", {"value": "2", "key": "b"})]
    assert efficiency_counts(transcript(reordered_args))["redundant_calls"] == 1  # canonical arguments


def test_loop_flag_from_repeats_or_termination():
    three = [e for _ in range(3) for e in call(1, "get_item", {"key": "z"}, ok=False)]
    assert efficiency_counts(transcript(three))["loop"] is True
    # one definition (issue 18): a loop is one call repeated; a turn cap is a termination, not a loop
    assert efficiency_counts(transcript([], reason="max_turns"))["loop"] is False
    assert efficiency_counts(transcript([], reason="agent_loop"))["loop"] is True
    interrupted = [*call(1, "get_item", {"key": "z"}), *call(1, "get_item", {"key": "y"}), *call(1, "get_item", {"key": "z"})]
    assert efficiency_counts(transcript(interrupted))["loop"] is False


def test_tokens_cost_latency_and_retries_by_role():
    events = [model(1, "simulator", latency=1.0), UserMessage(turn=1, text="hi"),
              model(1, "agent", latency=2.0, retries=2, wait=1.5), AgentMessage(turn=1, text="hello"),
              model(2, "simulator", latency=0.5), model(2, "judge", tokens=100, cost=0.01)]
    counts = efficiency_counts(transcript(events))
    assert counts["usage"]["agent"] == {"model_calls": 1, "input_tokens": 10, "output_tokens": 10, "cached_tokens": 0,
                                        "total_tokens": 20, "cost_usd": 0.001}
    assert counts["usage"]["simulator"]["total_tokens"] == 40 and counts["usage"]["judge"]["total_tokens"] == 200
    assert counts["total_tokens"] == 60  # agent + simulator: the trial's spend; the judge is reported beside it
    assert counts["cost_usd"] == pytest.approx(0.003)
    assert counts["model_call_latency_s"]["max"] == 2.0 and counts["model_call_latency_s"]["count"] == 4
    assert counts["time_to_first_action_s"] == 3.0 and counts["first_action_turn"] == 1 and counts["first_action_event"] == 3
    assert counts["retries"] == 2 and counts["retry_wait_s"] == 1.5
    assert counts["duration_s"] == 3.0


def test_unknown_usage_is_none_never_zero():
    unknown_cost = efficiency_counts(transcript([model(1, "agent", cost=None), model(1, "simulator")]))
    assert unknown_cost["usage"]["agent"]["cost_usd"] is None and unknown_cost["cost_usd"] is None
    assert unknown_cost["total_tokens"] == 40
    python_agent = efficiency_counts(transcript([model(1, "simulator")], agent="python"))
    assert python_agent["usage"]["agent"]["cost_usd"] is None and python_agent["total_tokens"] is None
    offline = efficiency_counts(transcript([], agent="llm", simulator="rules"))
    assert offline["cost_usd"] == 0.0 and offline["total_tokens"] == 0  # an LLM that made no call spent nothing


def test_efficiency_check_is_soft_and_termination_is_hard():
    checks = by_name(grade_efficiency(ctx_of(transcript([UserMessage(turn=1, text="hi")]))))
    assert checks["efficiency"].status == "pass" and not checks["efficiency"].hard
    assert checks["efficiency"].details["user_turns"] == 1
    assert checks["termination"].status == "pass" and checks["termination"].hard
    assert not any(c.kind == "budget" for c in checks.values())


@pytest.mark.parametrize("reason", ["max_turns", "agent_loop", "budget_exceeded", "context_window"])
def test_caps_fail_the_termination_check(reason):
    t = transcript([UserMessage(turn=1, text="hi"), AgentMessage(turn=1, text="hm")], reason=reason)
    check = by_name(grade_efficiency(ctx_of(t)))["termination"]
    assert check.status == "fail" and check.event == 1 and reason in check.reason
    assert verdict_of(t, [check]) == "fail"


def test_error_termination_is_left_to_the_verdict():
    t = transcript([], reason="error")
    check = by_name(grade_efficiency(ctx_of(t)))["termination"]
    assert check.status == "not_run" and verdict_of(t, [check]) == "error"


def test_budgets_pass_and_fail_pointing_at_the_event_over_the_limit():
    events = [model(1, "simulator"), UserMessage(turn=1, text="a"), *call(1, "get_item", {"key": "a"}),
              *call(1, "get_item", {"key": "b"}), model(1, "agent"), AgentMessage(turn=1, text="b"),
              model(2, "simulator"), UserMessage(turn=2, text="c"), AgentMessage(turn=2, text="d")]
    t = transcript(events, duration=12.0)
    budgets = {"max_user_turns": 2, "max_agent_turns": 1, "max_tool_calls": 1, "max_tokens": 50,
               "max_cost_usd": 0.0025, "max_seconds": 10}
    checks = by_name(grade_efficiency(ctx_of(t, budgets)))
    assert checks["budget:max_user_turns"].status == "pass"
    agent_turns = checks["budget:max_agent_turns"]
    assert agent_turns.status == "fail" and agent_turns.event == 10 and agent_turns.turn == 2
    tools = checks["budget:max_tool_calls"]
    assert tools.status == "fail" and tools.event == 4 and tools.call_id == events[4].call_id
    assert checks["budget:max_tokens"].status == "fail" and checks["budget:max_tokens"].event == 8  # 60 > 50 at the 3rd call
    assert checks["budget:max_cost_usd"].status == "fail" and checks["budget:max_cost_usd"].event == 8
    assert checks["budget:max_seconds"].status == "fail" and "12" in checks["budget:max_seconds"].reason
    assert all(c.kind == "budget" and c.hard for n, c in checks.items() if n.startswith("budget:"))
    assert verdict_of(t, list(checks.values())) == "fail"


def test_unknown_cost_or_tokens_is_not_run_never_passed():
    t = transcript([model(1, "agent", cost=None, tokens=None), model(1, "simulator")])
    checks = by_name(grade_efficiency(ctx_of(t, {"max_cost_usd": 1.0, "max_tokens": 10_000, "max_tool_calls": 5})))
    cost, tokens = checks["budget:max_cost_usd"], checks["budget:max_tokens"]
    assert cost.status == "not_run" and "cost unknown" in cost.reason and cost.passed is None
    assert tokens.status == "not_run" and "tokens unknown" in tokens.reason
    assert checks["budget:max_tool_calls"].status == "pass"


def test_real_loop_agent_loop_is_flagged_and_fails():
    def looping(inp):
        while True:
            inp.tools.call("get_item", key="zzz")

    t = asyncio.run(run_trial(make_trial(PythonAgent(looping, "t:loop"), RulesSimulator())))
    checks = by_name(grade_efficiency(ctx_of(t)))
    assert checks["efficiency"].details["loop"] is True and checks["efficiency"].details["max_repeat_run"] == 3
    assert checks["termination"].status == "fail"


def test_real_loop_python_agent_cost_is_unknown():
    t = asyncio.run(run_trial(make_trial(PythonAgent(kv_agent, "tests.support:kv_agent"), RulesSimulator())))
    checks = by_name(grade_efficiency(ctx_of(t, {"max_cost_usd": 0.05, "max_user_turns": 2})))
    assert checks["efficiency"].details["tool_calls"] == 1 and checks["efficiency"].details["user_turns"] == 2
    assert checks["budget:max_cost_usd"].status == "not_run"  # a Python agent may spend without recording it
    assert checks["budget:max_user_turns"].status == "pass"
    assert checks["termination"].status == "pass"
    assert [e for e in t.events if isinstance(e, Signal)]
