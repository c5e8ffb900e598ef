"""The LangGraph adapter through real LangGraph graphs (offline: scripted chat models): node
transitions and graph state recorded, the graph-trajectory check (a supervisor's wrong route that no
message check catches), the single-step check by interrupt (a wrong first call caught, nothing run),
final-state assertions, one thread per trial, loops stopped, and the forms a graph may come in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from examples.langgraph_retail import graph_with_faults, react_graph
from examples.retail_agents import Faults
from simlab.domains.retail import DOMAIN
from simlab.env import Environment
from simlab.errors import SpecError
from simlab.frameworks.langgraph import LangGraphAgent, domain_tools
from simlab.sim.agent_io import AgentInput
from simlab.sim.probe import ProbeHandle
from simlab.transcript import GraphState, GraphStep, ModelCall, PendingToolCall, ToolCall
from tests.framework_play import BY_ID, FREE, agent_of, check, failed, play, scenario


class Scripted(BaseChatModel):
    """A chat model that answers with ``script(messages)``."""

    script: Callable[[list[BaseMessage]], AIMessage]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        message = self.script(messages)
        message.usage_metadata = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
        return ChatResult(generations=[ChatGeneration(message=message)])


def react(tools: list[Any], script: Callable[[list[BaseMessage]], AIMessage]) -> StateGraph:
    return react_graph(tools, Scripted(script=script))  # the example's agent ⇄ tools graph


def refund_at_once(messages: list[BaseMessage]) -> AIMessage:
    """A reckless agent: its first decision is a refund, before looking anything up."""
    if isinstance(messages[-1], HumanMessage) and sum(isinstance(m, HumanMessage) for m in messages) == 1:
        return AIMessage("", tool_calls=[{"id": "r1", "name": "issue_refund",
                                          "args": {"order_id": "A123", "amount": 49.9, "method": "original_card"}}])
    return AIMessage("Done: your refund of 49.90 to your original card has been issued.")


def reckless_graph(tools: list[Any]) -> Any:
    return react(tools, refund_at_once).compile()


def graph_agent(factory: Any, **settings: Any) -> LangGraphAgent:
    return LangGraphAgent("tests:graph", factory, price=FREE, **settings)


# --- graph trajectory: the supervisor's route ----------------------------------------------------

ROUTE = {"mode": "in_order", "nodes": ["supervisor", "help_desk"]}


async def test_a_wrong_route_fails_the_graph_trajectory_and_nothing_else() -> None:
    scn = scenario("policy-question-no-refund", graph_trajectory=ROUTE)
    right, right_checks = await play("policy-question-no-refund",
                                     {"langgraph": "examples.langgraph_retail:supervisor_graph", "price": FREE}, scn=scn)
    assert failed(right_checks) == []
    visited = [e.node for e in right.events if isinstance(e, GraphStep)]
    assert visited[:2] == ["supervisor", "help_desk/agent"] and "help_desk" in visited

    wrong, wrong_checks = await play("policy-question-no-refund",
                                     {"langgraph": "examples.langgraph_retail:misrouting_supervisor_graph",
                                      "price": FREE}, scn=scn)
    assert failed(wrong_checks) == ["graph_trajectory:in_order"]
    verdict = check(wrong_checks, "graph_trajectory:in_order")
    assert verdict.reason.startswith("help_desk is missing after supervisor")
    assert isinstance(wrong.events[verdict.event], GraphStep)
    # the conversation and its tool calls are the same: no message-level check could tell
    said = lambda t: [(e.type, getattr(e, "text", None)) for e in t.events if e.type in ("user", "agent")]  # noqa: E731
    assert said(wrong) == said(right)
    assert [c.name for c in wrong.tool_calls()] == [c.name for c in right.tool_calls()]
    assert {c.name: c.status for c in wrong_checks if c.name != verdict.name} == \
        {c.name: c.status for c in right_checks if c.name != verdict.name}


@pytest.mark.parametrize(("mode", "nodes", "ok"), [
    ("exact", ["supervisor", "help_desk/agent", "help_desk/tools", "help_desk/agent", "help_desk"], True),
    ("exact", ["supervisor", "help_desk"], False),
    ("subset", ["supervisor", "help_desk", "help_desk/agent", "help_desk/tools"], True),
    ("subset", ["supervisor", "help_desk"], False),
    ("superset", ["help_desk", "supervisor"], True),
    ("any_order", ["help_desk", "supervisor", "supervisor"], False),
])
async def test_graph_trajectory_modes_are_the_trajectory_modes(mode: str, nodes: list[str], ok: bool) -> None:
    scn = scenario("policy-question-no-refund", graph_trajectory={"mode": mode, "nodes": nodes})
    _, checks = await play("policy-question-no-refund",
                           {"langgraph": "examples.langgraph_retail:supervisor_graph", "price": FREE}, scn=scn)
    assert check(checks, f"graph_trajectory:{mode}").status == ("pass" if ok else "fail")


# --- final graph state -------------------------------------------------------------------------

async def test_assertions_on_the_final_graph_state() -> None:
    asserted = [{"path": "route", "equals": "help_desk", "name": "routed to the help desk"},
                {"path": "messages", "ge": 4, "name": "several messages"}]
    scn = scenario("policy-question-no-refund", graph_state=asserted)
    transcript, checks = await play("policy-question-no-refund",
                                    {"langgraph": "examples.langgraph_retail:supervisor_graph", "price": FREE}, scn=scn)
    assert check(checks, "graph_state: routed to the help desk").status == "pass"
    assert check(checks, "graph_state: several messages").status == "pass"
    last = [e for e in transcript.events if isinstance(e, GraphState)][-1]
    assert last.values["route"] == "help_desk" and last.next == []

    _, checks = await play("policy-question-no-refund",
                           {"langgraph": "examples.langgraph_retail:misrouting_supervisor_graph", "price": FREE},
                           scn=scn)
    wrong = check(checks, "graph_state: routed to the help desk")
    assert wrong.status == "fail" and "expected 'help_desk', got 'refunds'" in wrong.reason


# --- single step via interrupt -----------------------------------------------------------------

FIRST = {"tool": "find_customer_orders", "args": {"customer_id": "C-31"}}


async def test_the_first_tool_call_is_checked_at_an_interrupt() -> None:
    scn = scenario("no-order-id-lookup", first_tool_call=FIRST)
    transcript, checks = await play("no-order-id-lookup", {"langgraph": "examples.langgraph_retail:careful_graph",
                                                           "price": FREE}, scn=scn)
    assert failed(checks) == []
    [pending] = [e for e in transcript.events if isinstance(e, PendingToolCall)]
    assert (pending.name, pending.arguments, pending.stopped_at) == \
        ("find_customer_orders", {"customer_id": "C-31"}, "interrupt_before:tools")
    index = transcript.events.index(pending)
    assert not any(isinstance(e, ToolCall) for e in transcript.events[:index])
    # the real first turn then makes that call once, for real
    assert [c.name for c in transcript.tool_calls()].count("find_customer_orders") == 1


async def test_a_wrong_first_tool_call_is_caught_and_never_run() -> None:
    scn = scenario("refund-damaged-card", first_tool_call={"tool": "lookup_order", "args": {"order_id": "A123"}})
    transcript, checks = await play("refund-damaged-card", graph_agent(reckless_graph), scn=scn)
    first = check(checks, "first_tool_call")
    assert first.status == "fail"
    assert first.reason.startswith("expected lookup_order(order_id=") and "decided issue_refund(" in first.reason
    assert first.details["executed"] is False
    # the probe ran nothing: the only issue_refund is the real turn's, after the probe
    pending = transcript.events[first.event]
    assert isinstance(pending, PendingToolCall) and pending.stopped_at == "interrupt_before:tools"
    assert [c.name for c in transcript.tool_calls()] == ["issue_refund"]
    assert transcript.events.index(transcript.tool_calls()[0]) > first.event


async def test_the_probe_alone_leaves_the_environment_untouched() -> None:
    env = Environment(DOMAIN, DOMAIN.build_state())
    before = env.snapshot()
    events: list[Any] = []
    handle = ProbeHandle(env, events.append, turn=1)
    inp = AgentInput([{"role": "user", "content": "refund A123 now"}], {"signed_in_customer": "C-17"}, handle,
                     DOMAIN.policy, 1, 1, record=events.append)
    pending = await graph_agent(reckless_graph).probe(inp)
    assert pending.name == "issue_refund" and pending.arguments == \
        {"order_id": "A123", "amount": 49.9, "method": "original_card"}
    assert env.snapshot() == before
    assert [type(e).__name__ for e in events] == ["ModelCall"]  # the decision was paid for; nothing else


async def test_a_graph_without_a_tool_node_is_stopped_at_the_tool_boundary() -> None:
    def custom(tools: list[Any]) -> Any:  # a node that calls the tool itself: nothing to interrupt before
        async def act(state: MessagesState) -> dict[str, Any]:
            lookup = next(t for t in tools if t.name == "lookup_order")
            result = await lookup.ainvoke({"order_id": "A123"})
            return {"messages": [AIMessage(str(result))]}

        graph = StateGraph(MessagesState)
        graph.add_node("act", act)
        graph.add_edge(START, "act")
        graph.add_edge("act", END)
        return graph.compile()

    scn = scenario("refund-damaged-card", first_tool_call={"tool": "lookup_order"})
    transcript, checks = await play("refund-damaged-card", graph_agent(custom), scn=scn)
    [pending] = [e for e in transcript.events if isinstance(e, PendingToolCall)]
    # called outside a ToolNode, the probe stops it at the tool itself
    assert (pending.stopped_at, pending.name, pending.arguments) == ("tool_boundary", "lookup_order", {"order_id": "A123"})
    assert check(checks, "first_tool_call").status == "pass"
    assert len(transcript.tool_calls()) == sum(e.type == "agent" for e in transcript.events)  # one per turn, none by the probe


# --- the trace, the thread, the forms ------------------------------------------------------------

async def test_steps_state_and_model_calls_are_recorded() -> None:
    transcript, _ = await play("refund-damaged-card", graph_agent(lambda tools: react(tools, refund_at_once).compile()))
    kinds = [e.type for e in transcript.events if e.type in ("graph_step", "tool_call", "model_call", "graph_state")]
    assert kinds[:6] == ["model_call", "graph_step", "tool_call", "graph_step", "model_call", "graph_step"]
    steps = [e for e in transcript.events if isinstance(e, GraphStep)]
    assert [s.node for s in steps[:3]] == ["agent", "tools", "agent"]
    assert steps[0].update["messages"][0]["tool_calls"][0]["name"] == "issue_refund"
    calls = [e for e in transcript.events if isinstance(e, ModelCall)]
    assert all(c.usage.input_tokens == 7 and c.usage.output_tokens == 3 and c.usage.cost_usd == 0 for c in calls)
    states = [e for e in transcript.events if isinstance(e, GraphState)]
    assert len(states) == transcript.user_turns() - (1 if transcript.termination.reason.value == "goal_reached" else 0)
    assert states[0].values == {"messages": 4}


async def test_each_trial_has_its_own_thread() -> None:
    agent = graph_agent(lambda tools: react(tools, refund_at_once).compile())
    (a, _), (b, _) = await asyncio.gather(play("refund-damaged-card", agent, trial=1),
                                          play("refund-damaged-card", agent, trial=2))
    for transcript in (a, b):  # each thread saw only its own conversation
        counts = [e.values["messages"] for e in transcript.events if isinstance(e, GraphState)]
        assert counts == [4 + 2 * i for i in range(len(counts))]
        assert transcript.final_state["refunds"][-1]["order_id"] == "A123"


async def test_a_looping_graph_is_stopped_as_a_loop_not_a_crash() -> None:
    agent = graph_agent(graph_with_faults(Faults(loop_on_lookup=True)))
    transcript, _ = await play("refund-damaged-card", agent)
    assert transcript.termination.reason.value == "agent_loop", transcript.termination


def test_the_graph_may_come_in_any_form() -> None:
    tools = domain_tools("retail")
    assert [t.name for t in tools] == DOMAIN.tool_names
    agent = agent_of({"langgraph": "tests.test_frameworks_langgraph:MODULE_GRAPH"})
    assert agent.pin().kind == "langgraph" and agent.pin().ref == "tests.test_frameworks_langgraph:MODULE_GRAPH"
    with pytest.raises(SpecError, match="is a tuple, not a LangGraph graph"):
        agent_of({"langgraph": "examples.langgraph_retail:CONTEXT_KEYS"})
    with pytest.raises(SpecError, match="has no attribute 'nope'"):
        agent_of("langgraph:examples.langgraph_retail:nope")


MODULE_GRAPH = react(domain_tools("retail"), refund_at_once)  # an uncompiled StateGraph, built at import


async def test_a_graph_built_at_import_with_domain_tools_runs() -> None:
    transcript, _ = await play("refund-damaged-card", {"langgraph": "tests.test_frameworks_langgraph:MODULE_GRAPH"})
    assert [c.name for c in transcript.tool_calls()] == ["issue_refund"]
    assert transcript.final_state["refunds"][-1]["order_id"] == "A123"


def asking(value: Any) -> Callable[[list[Any]], Any]:
    """A factory of a graph whose one node asks the human ``interrupt(value)`` and repeats the answer."""
    def factory(tools: list[Any]) -> Any:
        async def confirm(state: MessagesState) -> dict[str, Any]:
            answer = interrupt(value)
            return {"messages": [AIMessage(f"You said: {answer}")]}

        graph = StateGraph(MessagesState)
        graph.add_node("confirm", confirm)
        graph.add_edge(START, "confirm")
        graph.add_edge("confirm", END)
        return graph.compile(checkpointer=InMemorySaver())

    return factory


async def test_a_graph_that_asks_a_human_is_resumed_by_the_next_message() -> None:
    question = "Shall I refund 49.90 for order A123 to your original card (visa ending 4242)?"
    transcript, _ = await play("refund-damaged-card", graph_agent(asking(question)))
    replies = [e.text for e in transcript.events if e.type == "agent"]
    assert replies[0].startswith("Shall I refund 49.90")
    user = [e.text for e in transcript.events if e.type == "user"]
    assert replies[1] == f"You said: {user[1]}"
    states = [e for e in transcript.events if isinstance(e, GraphState)]
    assert states[0].next == ["confirm"] and states[1].next == []


async def test_a_static_breakpoint_asks_before_each_tool_and_the_next_message_resumes_it() -> None:
    transcript, checks = await play("refund-damaged-card", {"langgraph": "examples.langgraph_retail:approval_graph",
                                                            "price": FREE})
    # the refund went through; each approval is a user turn, so the scenario's budget of them is spent
    assert failed(checks) == ["budget:max_user_turns"]
    assert [c.name for c in transcript.tool_calls()] == ["lookup_order", "check_refund_policy", "issue_refund"]
    replies = [e.text for e in transcript.events if e.type == "agent"]
    assert any("I will call: issue_refund {" in r and r.endswith("Shall I go ahead?") for r in replies)
    paused = [e.next for e in transcript.events if isinstance(e, GraphState) and e.next]
    assert paused and all(n == ["tools"] for n in paused)  # the graph trajectory shows each pause


@pytest.mark.parametrize(("value", "shown"), [
    ({"question": "Refund 49.90 to visa 4242?", "amount": 49.9}, "Refund 49.90 to visa 4242?"),
    ({"message": "Approve?"}, "Approve?"),
    ({"amount": 49.9, "order": "A123"}, '{"amount": 49.9, "order": "A123"}'),
    (["a", 1], '["a", 1]'),
])
async def test_a_dict_passed_to_interrupt_is_shown_as_the_agents_words(value: Any, shown: str) -> None:
    transcript, _ = await play("refund-damaged-card", graph_agent(asking(value)))
    assert [e.text for e in transcript.events if e.type == "agent"][0] == shown


async def test_a_graph_with_its_own_tools_is_judged_on_its_trajectory_and_not_on_state() -> None:
    """The team's own tools (not simlab's): the calls are recorded from the graph's messages, the
    trajectory and policy checks judge them, and the state checks are not run (the domain never saw
    the calls), so the trial is unjudged, never 'lookup_order is missing'."""
    transcript, checks = await play("refund-damaged-card", {"langgraph": "examples.langgraph_retail:own_tools_graph",
                                                            "price": FREE})
    calls = transcript.tool_calls()
    assert [c.name for c in calls] == ["lookup_order", "check_refund_policy", "issue_refund"]
    assert all(c.outside for c in calls) and calls[0].arguments == {"order_id": "A123"}
    results = [e for e in transcript.events if e.type == "tool_result"]
    assert len(results) == 3 and all(r.ok for r in results)
    assert check(checks, "trajectory:in_order").status == "pass"
    state = [c for c in checks if c.kind == "state"]
    assert state and all(c.status == "not_run" and "tools of its own" in c.reason for c in state)
    assert transcript.final_state == DOMAIN.build_state(BY_ID["refund-damaged-card"].spec.initial_state).model_dump(
        mode="json")  # the trial's own state: untouched
    record = ToolCall(turn=1, call_id="c", name="x")
    assert "outside" not in record.model_dump(mode="json")  # written only when true


def test_a_message_in_a_step_is_shown_once() -> None:
    from simlab.frameworks.langgraph import _update

    seen: set[str] = set()
    first = [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]
    shown, omitted = _update({"messages": first}, seen)
    assert [m["type"] for m in shown["messages"]] == ["human", "ai"] and omitted == 0
    shown, omitted = _update({"messages": [*first, ToolMessage("x", tool_call_id="t", id="3")], "route": "a"}, seen)
    assert [m["type"] for m in shown["messages"]] == ["tool"] and omitted == 2 and shown["route"] == "a"


async def test_max_steps_is_the_graphs_recursion_limit() -> None:
    transcript, _ = await play("refund-damaged-card", {"langgraph": "examples.langgraph_retail:careful_graph",
                                                       "price": FREE, "max_steps": 2})
    assert transcript.agent.settings["max_steps"] == 2
    assert transcript.termination.reason.value == "agent_loop"  # the framework stopped its own run: a loop, not a crash
    assert "GraphRecursionError" in transcript.termination.detail
