"""Framework agents whose model is a real provider reached through the framework's own client (the
``openai`` SDK), as teams point them at a provider: the Agents SDK's ``OpenAIChatCompletionsModel``,
pydantic-ai's ``OpenAIChatModel`` and a LangGraph graph whose agent node calls the client. The
provider is ``tests/strict_server.py`` at ``$SIMLAB_T_PROVIDER_URL`` (key ``$SIMLAB_T_PROVIDER_KEY``),
so its outages (429, 503, a dead endpoint, a refused key) are real HTTP answers. The client's own
retries are off (``max_retries=0``): the tests never wait for a back-off.

    agent: {openai_agents: tests.provider_agents:openai_agents_agent}
    agent: {openai_agents: tests.provider_agents:openai_agents_litellm_agent}
    agent: {pydantic_ai: tests.provider_agents:pydantic_ai_agent}
    agent: {langgraph: tests.provider_agents:langgraph_graph}
    agent: {python: tests.provider_agents:raises_its_own}     # the agent's own bug, for contrast
"""

from __future__ import annotations

import os
from typing import Any

MODEL = "team-model"
PROMPT = "You are the retail support agent. Use the tools."


def _key() -> str | None:
    """The provider's key; an empty ``$SIMLAB_T_PROVIDER_KEY`` gives none, so the client looks for
    its own variable (``OPENAI_API_KEY``), as a team's agent does when no key is passed."""
    return os.environ.get("SIMLAB_T_PROVIDER_KEY", "sk-team-provider-key") or None


def _client() -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=os.environ["SIMLAB_T_PROVIDER_URL"], max_retries=0, api_key=_key())


def openai_agents_agent(tools: list[Any]) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel

    return Agent(name="support", instructions=PROMPT, tools=tools,
                 model=OpenAIChatCompletionsModel(model=MODEL, openai_client=_client()))


def openai_agents_litellm_agent(tools: list[Any]) -> Any:
    """The Agents SDK's ``LitellmModel``: LiteLLM wraps what the provider's client raised (a
    connection never made, a missing key) in its own 500."""
    from agents import Agent
    from agents.extensions.models.litellm_model import LitellmModel

    return Agent(name="support", instructions=PROMPT, tools=tools,
                 model=LitellmModel(model=f"openai/{MODEL}", base_url=os.environ["SIMLAB_T_PROVIDER_URL"],
                                    api_key=_key()))


def pydantic_ai_agent(tools: list[Any]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return Agent(OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=_client())), tools=tools,
                 instructions=PROMPT)


def langgraph_graph(tools: list[Any]) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    client = _client()

    async def agent(state: MessagesState) -> dict[str, Any]:
        messages = [{"role": "system", "content": PROMPT}]
        messages += [{"role": "assistant" if m.type == "ai" else "user", "content": str(m.content)}
                     for m in state["messages"]]
        answer = await client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[call-overload]
        return {"messages": [AIMessage(answer.choices[0].message.content or "")]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph.compile()


def raises_its_own(inp: Any) -> str:
    """A Python agent with a bug of its own: that stays the agent's failure."""
    raise ValueError("the order id could not be parsed")
