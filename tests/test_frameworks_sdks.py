"""The OpenAI Agents SDK and pydantic-ai adapters through the real SDKs (offline: the SDK's own
``Model`` interface and pydantic-ai's ``FunctionModel``): handoffs recorded and usable in policy
rules, tracing that never reaches the network, usage recorded, loops stopped, and the single-step
probe stopping a tool before it runs."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from examples.retail_agents import Faults
from simlab.domains.retail import DOMAIN
from simlab.env import Environment
from simlab.env.checks import check_against_domain
from simlab.sim.agent_io import AgentInput
from simlab.sim.probe import ProbeHandle, probe_first_step
from simlab.transcript import Handoff, ModelCall, PendingToolCall
from tests.framework_play import BY_ID, CAREFUL, FREE, check, failed, play, scenario
from tests.support import LazyModule

# The SDKs (seconds to import) are imported by the tests that use them, never while collecting.
oa_adapter: Any = LazyModule("simlab.frameworks.openai_agents")
pa_adapter: Any = LazyModule("simlab.frameworks.pydantic_ai")

if TYPE_CHECKING:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo

HANDOFF_RULES = {"rules": [{"before": ["handoff:support", "issue_refund"]}],
                 "forbidden": ["issue_store_credit", {"tool": "issue_refund", "args": {"method": "store_credit"}},
                               "handoff:billing"]}


# --- OpenAI Agents SDK: handoffs ------------------------------------------------------------------

async def test_handoffs_are_recorded_and_rules_can_name_them() -> None:
    scn = scenario("refund-damaged-card", **HANDOFF_RULES)
    transcript, checks = await play("refund-damaged-card", CAREFUL["openai_agents"], scn=scn)
    assert failed(checks) == []
    [handoff] = [e for e in transcript.events if isinstance(e, Handoff)]
    assert (handoff.source, handoff.target, handoff.turn) == ("triage", "support", 1)
    assert check(checks, "before(handoff:support, issue_refund)").status == "pass"

    transcript, checks = await play("refund-damaged-card", {
        "openai_agents": "examples.openai_agents_retail:misrouting_agent", "price": FREE}, scn=scn)
    assert failed(checks) == ["before(handoff:support, issue_refund)", "forbidden(handoff:billing)"]
    rule = check(checks, "before(handoff:support, issue_refund)")
    assert "issue_refund at turn" in rule.reason and "came before any successful handoff:support" in rule.reason
    assert isinstance(transcript.events[check(checks, "forbidden(handoff:billing)").event], Handoff)


def test_a_scenario_may_name_handoffs_where_it_names_tools() -> None:
    entry = BY_ID["refund-damaged-card"]
    named = replace(entry, spec=scenario("refund-damaged-card", **HANDOFF_RULES))
    assert check_against_domain(named)[1] == []
    typo = replace(entry, spec=scenario("refund-damaged-card", forbidden=["handof:billing"]))
    assert "unknown tool 'handof:billing'" in " ".join(check_against_domain(typo)[1])


async def test_tracing_is_off_and_nothing_leaves_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import agents
    from agents.tracing import get_trace_provider

    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def guard(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError(f"blocked {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guard)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    agent = oa_adapter.OpenAIAgentsAgent.load("examples.openai_agents_retail:careful_agent", price=FREE)
    transcript, checks = await play("refund-damaged-card", agent)
    assert failed(checks) == []
    get_trace_provider().force_flush()
    assert attempts == []
    assert isinstance(agents.trace("x"), agents.tracing.traces.NoOpTrace)  # traces are not even made
    assert get_trace_provider()._multi_processor._processors == ()


# --- pydantic-ai: usage ------------------------------------------------------------------------------

def counting_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks order A123 up for each user message, then answers; reports its usage."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.usage import RequestUsage

    usage = RequestUsage(input_tokens=120, output_tokens=30, cache_read_tokens=100)
    if any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": "A123"})], usage=usage,
                             model_name="counting")
    return ModelResponse(parts=[TextPart("Order A123 is delivered.")], usage=usage, model_name="counting")


def counting_agent(tools: list[Any]) -> PydanticAgent[Any, str]:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.function import FunctionModel

    return PydanticAgent(FunctionModel(counting_model, model_name="counting"), tools=tools)


@pytest.mark.parametrize(("price", "cost"), [({"input": 1.0, "output": 10.0}, (120 * 1.0 + 30 * 10.0) / 1e6),
                                             (None, None)])
async def test_pydantic_ai_usage_is_recorded_per_model_request(price: Any, cost: float | None) -> None:
    agent = pa_adapter.PydanticAIAgent("tests:counting", counting_agent, price=price)
    transcript, _ = await play("refund-damaged-card", agent)
    calls = [e for e in transcript.events if isinstance(e, ModelCall)]
    turns = sum(e.type == "agent" for e in transcript.events)
    assert len(calls) == 2 * turns  # a tool call and an answer per turn
    assert {(c.model, c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_tokens) for c in calls} == \
        {("counting", 120, 30, 100)}
    assert {c.usage.cost_usd for c in calls} == {cost}  # no price: unknown, never zero
    first = transcript.events.index(calls[0])
    assert transcript.events[first + 1].type == "tool_call"  # recorded before the call it led to


# --- both SDKs: loops and the single-step probe -------------------------------------------------------

@pytest.mark.parametrize("kind", ["openai_agents", "pydantic_ai"])
async def test_a_looping_agent_is_stopped_as_a_loop_not_a_crash(kind: str) -> None:
    from examples.openai_agents_retail import agent_with_faults as oa_with_faults
    from examples.pydantic_ai_retail import agent_with_faults as pa_with_faults

    adapter, factory = {"openai_agents": (oa_adapter.OpenAIAgentsAgent, oa_with_faults),
                        "pydantic_ai": (pa_adapter.PydanticAIAgent, pa_with_faults)}[kind]
    agent = adapter("tests:looping", factory(Faults(loop_on_lookup=True)), price=FREE)
    transcript, _ = await play("refund-damaged-card", agent)
    assert transcript.termination.reason.value == "agent_loop", transcript.termination


@pytest.mark.parametrize("kind", ["python", "openai_agents", "pydantic_ai"])
async def test_the_first_tool_call_is_stopped_at_the_tool_for_other_agents(kind: str) -> None:
    scn = scenario("no-order-id-lookup", first_tool_call={"tool": "find_customer_orders",
                                                         "args": {"customer_id": "C-31"}})
    transcript, checks = await play("no-order-id-lookup", CAREFUL[kind], scn=scn)
    assert failed(checks) == []
    [pending] = [e for e in transcript.events if isinstance(e, PendingToolCall)]
    assert (pending.name, pending.stopped_at) == ("find_customer_orders", "tool_boundary")

    wrong = scenario("no-order-id-lookup", first_tool_call={"tool": "lookup_order"})
    _, checks = await play("no-order-id-lookup", CAREFUL[kind], scn=wrong)
    assert check(checks, "first_tool_call").status == "fail"


async def test_a_probe_runs_no_tool_for_an_sdk_agent() -> None:
    env = Environment(DOMAIN, DOMAIN.build_state())
    before = env.snapshot()
    events: list[Any] = []
    inp = AgentInput([{"role": "user", "content": "Refund my order A123 please, it arrived broken."}],
                     {"signed_in_customer": "C-17"}, ProbeHandle(env, events.append, turn=1), DOMAIN.policy, 1, 1,
                     record=events.append)
    agent = oa_adapter.OpenAIAgentsAgent.load("examples.openai_agents_retail:careful_agent", price=FREE)
    pending = await probe_first_step(agent, inp)
    assert (pending.name, pending.arguments) == ("lookup_order", {"order_id": "A123"})
    assert env.snapshot() == before
    assert {type(e).__name__ for e in events} == {"ModelCall", "Handoff"}


@pytest.mark.parametrize("kind", ["openai_agents", "pydantic_ai"])
async def test_concurrent_trials_of_one_agent_keep_apart(kind: str) -> None:
    from tests.framework_play import agent_of

    agent = agent_of(CAREFUL[kind])  # one agent object, as a run shares it across its trials
    results = await asyncio.gather(play("refund-damaged-card", agent, trial=1),
                                   play("store-credit-wanted", agent, trial=1),
                                   play("refund-damaged-card", agent, trial=2))
    assert [failed(checks) for _, checks in results] == [[], [], []]
    refunds = [t.final_state["refunds"][-1]["order_id"] for t, _ in results]
    assert refunds[0] == refunds[2] == "A123" and refunds[1] != "A123"
