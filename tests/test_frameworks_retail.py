"""The done-when of the framework adapters: the same retail scenario, graded the same way, passes
with the careful agent written as a Python callable, a LangGraph graph, an OpenAI Agents SDK agent
and a pydantic-ai agent, and fails the same way when each carries the same planted defect
(refunding without check_refund_policy); and every retail scenario is green in each framework."""

from __future__ import annotations

import pytest

from tests.framework_play import CAREFUL, SCENARIO_IDS, SKIPS_POLICY_CHECK, failed, play

KINDS = list(CAREFUL)


@pytest.mark.parametrize("kind", KINDS)
async def test_careful_passes_and_the_planted_defect_fails_alike(kind: str) -> None:
    transcript, checks = await play("refund-damaged-card", CAREFUL[kind])
    assert transcript.agent.kind == kind
    assert failed(checks) == [], [c for c in checks if c.hard and c.status != "pass"]
    calls = [c.name for c in transcript.tool_calls()]
    assert calls == ["lookup_order", "check_refund_policy", "issue_refund"]

    _, python_checks = await play("refund-damaged-card", SKIPS_POLICY_CHECK["python"])
    transcript, checks = await play("refund-damaged-card", SKIPS_POLICY_CHECK[kind])
    assert "check_refund_policy" not in [c.name for c in transcript.tool_calls()]
    assert "before(check_refund_policy, issue_refund)" in failed(checks)
    assert failed(checks) == failed(python_checks)  # graded the same way, caught the same way


@pytest.mark.parametrize("kind", KINDS[1:])
@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
async def test_every_retail_scenario_is_green_in_each_framework(kind: str, scenario_id: str) -> None:
    transcript, checks = await play(scenario_id, CAREFUL[kind])
    assert failed(checks) == [], [(c.name, c.reason) for c in checks if c.hard and c.status != "pass"]
    python, _ = await play(scenario_id, CAREFUL["python"])
    assert [c.name for c in transcript.tool_calls()] == [c.name for c in python.tool_calls()]
    assert transcript.termination.reason == python.termination.reason
