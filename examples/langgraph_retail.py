"""The retail demo agent built as a LangGraph graph, as a team would build it: a ``StateGraph`` over
``MessagesState`` with an ``agent`` node (a chat model bound to the tools), a ``ToolNode`` and the
usual conditional edge. Only the model is scripted (``RetailPolicyChatModel``, the careful demo
agent's decisions as a LangChain chat model, see ``retail_policy``), so it runs offline; swap in
``ChatOpenAI(...)`` and the graph is unchanged.

    agent: {langgraph: examples.langgraph_retail:careful_graph}             # follows the policy
    agent: {langgraph: examples.langgraph_retail:graph_skipping_policy_check}   # planted defect

Both are factories: simlab calls them with the domain's tools (LangChain tools bound to the trial).
``supervisor_graph`` / ``misrouting_supervisor_graph`` put two workers behind a router: the second
sends policy questions to the refunds worker, a wrong route that only a graph trajectory shows.
``approval_graph`` stops before every tool run (``interrupt_before=["tools"]``) until the user answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from examples.retail_agents import NO_FAULTS, Faults, _is_policy_question
from examples.retail_policy import Reply, decide, read_context, system_prompt

CONTEXT_KEYS = ("signed_in_customer", "channel", "offer_store_credit_first")


class RetailPolicyChatModel(BaseChatModel):
    """A LangChain chat model whose answers are the retail demo agent's decisions."""

    faults: Any = NO_FAULTS

    @property
    def _llm_type(self) -> str:
        return "retail-policy"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RetailPolicyChatModel:
        return self  # it knows the retail tools already

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
        conversation, done, calls = [], [], 0
        for m in messages:
            if isinstance(m, HumanMessage):
                conversation.append({"role": "user", "content": m.text})
                done = []
            elif isinstance(m, AIMessage) and m.tool_calls:
                calls += len(m.tool_calls)
            elif isinstance(m, AIMessage):
                conversation.append({"role": "assistant", "content": m.text})
            elif isinstance(m, ToolMessage):
                done.append((m.name or "", m.text))
        step = decide(conversation, read_context(system), done, self.faults)
        if isinstance(step, Reply):
            message = AIMessage(step.text)
        else:
            message = AIMessage("", tool_calls=[{"id": f"call_{calls + 1}", "name": step.name, "args": step.args}])
        message.usage_metadata = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}  # code, not a model
        message.response_metadata = {"model_name": "retail-policy"}
        return ChatResult(generations=[ChatGeneration(message=message)])


def _context(config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable") or {}
    return {k: configurable[k] for k in CONTEXT_KEYS if k in configurable}


def react_graph(tools: list[Any], model: BaseChatModel) -> StateGraph:
    """agent ⇄ tools until the model answers in text."""
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        prompt = [SystemMessage(system_prompt(_context(config))), *state["messages"]]
        return {"messages": [await bound.ainvoke(prompt, config)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph


def careful_graph(tools: list[Any]) -> Any:
    return react_graph(tools, RetailPolicyChatModel()).compile()


def graph_skipping_policy_check(tools: list[Any]) -> Any:
    """The planted defect: refunds without calling check_refund_policy first."""
    return react_graph(tools, RetailPolicyChatModel(faults=Faults(skip_policy_check=True))).compile()


def approval_graph(tools: list[Any]) -> Any:
    """The approval pattern: the graph stops before every tool run (a static breakpoint, set at
    compile time) and goes on when the user answers."""
    return react_graph(tools, RetailPolicyChatModel()).compile(interrupt_before=["tools"])


def own_tools_graph(tools: list[Any]) -> Any:
    """A graph with the team's own tools (its own backend, here an in-memory copy of the demo shop),
    not simlab's: simlab records the calls from the graph's messages and judges the trajectory; the
    trial's state never sees them, so state checks are not run."""
    import json

    from langchain_core.tools import StructuredTool

    from simlab.domains.retail import DOMAIN
    from simlab.env import Environment
    from simlab.frameworks.common import tool_specs

    backend = Environment(DOMAIN, DOMAIN.build_state({}))  # the team's own systems, not the trial's

    def own(name: str, description: str, schema: dict[str, Any]) -> Any:
        def run(**arguments: Any) -> str:
            outcome = backend.execute(name, arguments)
            return json.dumps(outcome.result if outcome.ok else {"error": outcome.error})

        return StructuredTool(name=name, description=description, args_schema=schema, func=run)

    team_tools = [own(*spec) for spec in tool_specs(backend.tool_schemas())]
    return react_graph(team_tools, RetailPolicyChatModel()).compile()


def graph_with_faults(faults: Faults) -> Callable[[list[Any]], Any]:
    """A factory of the graph with these faults planted (tests use it)."""
    return lambda tools: react_graph(tools, RetailPolicyChatModel(faults=faults)).compile()


# --- a supervisor with two workers -----------------------------------------------------------------

class SupportState(MessagesState):
    route: str  # the worker the supervisor chose last


def _supervisor_graph(tools: list[Any], route: Callable[[str], str]) -> Any:
    def supervisor(state: SupportState) -> Command[Literal["refunds", "help_desk"]]:
        worker = route(state["messages"][-1].text)
        return Command(goto=worker, update={"route": worker})

    graph = StateGraph(SupportState)
    graph.add_node("supervisor", supervisor)
    graph.add_node("refunds", react_graph(tools, RetailPolicyChatModel()).compile())
    graph.add_node("help_desk", react_graph(tools, RetailPolicyChatModel()).compile())
    graph.add_edge(START, "supervisor")
    graph.add_edge("refunds", END)
    graph.add_edge("help_desk", END)
    return graph.compile()


def supervisor_graph(tools: list[Any]) -> Any:
    """Policy questions go to the help desk, everything else to refunds."""
    return _supervisor_graph(tools, lambda text: "help_desk" if _is_policy_question(text) else "refunds")


def misrouting_supervisor_graph(tools: list[Any]) -> Any:
    """The wrong route: everything goes to refunds (whose worker answers policy questions just as well)."""
    return _supervisor_graph(tools, lambda text: "refunds")
