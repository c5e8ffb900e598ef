"""Framework agents written as their docs teach, whose model is ``tests/rough_provider.py`` at
``$SIMLAB_T_ROUGH_URL`` (key ``$OPENAI_API_KEY``), reached through the framework's own client or
LiteLLM. The clients' own retries are off: the tests never wait for a back-off.

    agent: {openai_agents: tests.rough_agents:agents_sdk}          # OpenAIChatCompletionsModel
    agent: {openai_agents: tests.rough_agents:agents_sdk_retrying}  # the SDK's own retries
    agent: {openai_agents: tests.rough_agents:agents_sdk_litellm}  # the SDK's LitellmModel
    agent: {pydantic_ai: tests.rough_agents:pydantic_ai}           # OpenAIChatModel
    agent: {langgraph: tests.rough_agents:langgraph}               # a node calling litellm, a ToolNode
    agent: {langgraph: tests.rough_agents:langgraph_stream}        # the same, streamed
    agent: {langgraph: tests.rough_agents:langgraph_sync}          # the same, a plain function node
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

MODEL = "team-model"
PROMPT = "You are the retail support agent. Use the tools."


def _client() -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=os.environ["SIMLAB_T_ROUGH_URL"], max_retries=0,
                       api_key=os.environ["OPENAI_API_KEY"])


def agents_sdk(tools: list[Any]) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel

    return Agent(name="support", instructions=PROMPT, tools=tools,
                 model=OpenAIChatCompletionsModel(model=MODEL, openai_client=_client()))


def agents_sdk_retrying(tools: list[Any]) -> Any:
    """The SDK's own retries, as its docs configure them: a 429's Retry-After is waited out."""
    from agents import Agent, ModelRetrySettings, ModelSettings, OpenAIChatCompletionsModel, retry_policies

    retry = ModelRetrySettings(max_retries=3, policy=retry_policies.retry_after())
    return Agent(name="support", instructions=PROMPT, tools=tools, model_settings=ModelSettings(retry=retry),
                 model=OpenAIChatCompletionsModel(model=MODEL, openai_client=_client()))


def agents_sdk_litellm(tools: list[Any]) -> Any:
    from agents import Agent, ModelSettings
    from agents.extensions.models.litellm_model import LitellmModel

    model = LitellmModel(model=f"openai/{MODEL}", base_url=os.environ["SIMLAB_T_ROUGH_URL"],
                         api_key=os.environ["OPENAI_API_KEY"])
    return Agent(name="support", instructions=PROMPT, tools=tools, model=model,
                 model_settings=ModelSettings(extra_args={"num_retries": 0}))


def pydantic_ai(tools: list[Any]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return Agent(OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=_client())), tools=tools,
                 instructions=PROMPT)


def _graph(tools: list[Any], stream: bool, sync: bool = False) -> Any:
    import litellm
    from langchain_core.messages import AIMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    schemas = [convert_to_openai_tool(t) for t in tools]

    def chat(message: Any) -> dict[str, Any]:
        kind = {"human": "user", "ai": "assistant", "tool": "tool"}[message.type]
        out: dict[str, Any] = {"role": kind, "content": str(message.content)}
        if message.type == "tool":
            out["tool_call_id"] = message.tool_call_id
        if message.type == "ai" and message.tool_calls:
            out["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                                 for c in message.tool_calls]
        return out

    async def agent(state: MessagesState) -> dict[str, Any]:
        messages = [{"role": "system", "content": PROMPT}] + [chat(m) for m in state["messages"]]
        answer = await litellm.acompletion(
            model=f"openai/{MODEL}", api_base=os.environ["SIMLAB_T_ROUGH_URL"],
            api_key=os.environ["OPENAI_API_KEY"], messages=messages, tools=schemas, num_retries=0,
            stream=stream)
        if stream:
            parts = [part async for part in answer]
            answer = litellm.stream_chunk_builder(parts, messages=messages)
        return reply(answer)

    def agent_sync(state: MessagesState) -> dict[str, Any]:  # LangGraph runs it in a thread of its pool
        messages = [{"role": "system", "content": PROMPT}] + [chat(m) for m in state["messages"]]
        return reply(litellm.completion(
            model=f"openai/{MODEL}", api_base=os.environ["SIMLAB_T_ROUGH_URL"],
            api_key=os.environ["OPENAI_API_KEY"], messages=messages, tools=schemas, num_retries=0))

    def reply(answer: Any) -> dict[str, Any]:
        message = answer.choices[0].message
        calls, invalid = [], []
        for call in message.tool_calls or []:  # as langchain-openai parses them
            try:
                args = json.loads(call.function.arguments or "{}")
                if not isinstance(args, dict):
                    raise ValueError(f"arguments are a JSON {type(args).__name__}, not an object")
                calls.append({"id": call.id, "name": call.function.name, "args": args})
            except ValueError as exc:
                invalid.append({"id": call.id, "name": call.function.name, "args": call.function.arguments,
                                "error": str(exc), "type": "invalid_tool_call"})
        return {"messages": [AIMessage(message.content or "", tool_calls=calls, invalid_tool_calls=invalid)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent_sync if sync else agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def langgraph(tools: list[Any]) -> Any:
    return _graph(tools, stream=False)


def langgraph_stream(tools: list[Any]) -> Any:
    return _graph(tools, stream=True)


def langgraph_sync(tools: list[Any]) -> Any:
    """The same graph whose model node is a plain function (LangGraph runs it in a thread)."""
    return _graph(tools, stream=False, sync=True)



async def hangs_on_its_own(inp: Any) -> str:
    """A Python agent that asks its model (LiteLLM, then the openai client, each in a thread), then
    hangs in its own code: its failure, however many model calls it made before."""
    import asyncio

    import litellm
    from openai import OpenAI

    await asyncio.to_thread(litellm.completion, model=f"openai/{MODEL}", num_retries=0,
                            api_base=os.environ["SIMLAB_T_ROUGH_URL"], api_key=os.environ["OPENAI_API_KEY"],
                            messages=[{"role": "user", "content": "hello"}])
    client = OpenAI(base_url=os.environ["SIMLAB_T_ROUGH_URL"], max_retries=0, api_key=os.environ["OPENAI_API_KEY"])
    await asyncio.to_thread(client.chat.completions.create, model=MODEL,
                            messages=[{"role": "user", "content": "hello"}])
    await asyncio.Event().wait()
    return "never"


async def hangs_beside_an_idle_client_task(inp: Any) -> str:
    """A Python agent that leaves a request of its model client in flight in a task of its own (a
    warm-up whose answer it never waits for: the provider holds the connection open, as a pooled
    keep-alive does), then hangs in its own code: its failure, not its provider's."""
    import asyncio

    warm_up = asyncio.create_task(_client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "warm up"}]))
    _KEPT.add(warm_up)
    await asyncio.Event().wait()
    return "never"


async def waits_on_its_model_in_a_task(inp: Any) -> str:
    """A Python agent that awaits its model's answer through tasks of its own (a task awaited, a
    gather, an asyncio.wait, a wait_for, a shield, a TaskGroup, a queue a task of its own fills):
    the turn waits on its provider."""
    import asyncio

    async def ask() -> str:
        answer = await _client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        return str(answer.choices[0].message.content)

    async def own() -> None:  # the agent's own step, done: the turn then waits on the model only
        return None

    how = inp.context.get("how", "task")
    if how == "channel":  # a task of its own asks, the turn reads its answer from a queue
        answers: asyncio.Queue[str] = asyncio.Queue()

        async def produce() -> None:
            await answers.put(await ask())

        _KEPT.add(asyncio.create_task(produce()))
        return await answers.get()
    if how == "gather":
        return str((await asyncio.gather(own(), ask()))[1])
    if how == "wait":
        done, _ = await asyncio.wait({asyncio.create_task(ask())})
        return str(done.pop().result())
    if how == "wait_for":  # a bound of its own, longer than the turn's
        return await asyncio.wait_for(ask(), timeout=3600)
    if how == "shield":
        return await asyncio.shield(asyncio.create_task(ask()))
    if how == "taskgroup":
        async with asyncio.TaskGroup() as group:
            asked = group.create_task(ask())
        return asked.result()
    return await asyncio.create_task(ask())


async def asks_in_a_thread(inp: Any) -> str:
    """A Python agent that asks its model through the openai client's blocking API, in a thread."""
    import asyncio

    from openai import OpenAI

    client = OpenAI(base_url=os.environ["SIMLAB_T_ROUGH_URL"], max_retries=0, api_key=os.environ["OPENAI_API_KEY"])
    answer = await asyncio.to_thread(client.chat.completions.create, model=MODEL,
                                     messages=[{"role": "user", "content": "hello"}])
    return str(answer.choices[0].message.content)


def asks_synchronously(inp: Any) -> str:
    """A plain ``def`` agent that asks its model through the openai client's blocking API."""
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["SIMLAB_T_ROUGH_URL"], max_retries=0, api_key=os.environ["OPENAI_API_KEY"])
    answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello"}])
    return str(answer.choices[0].message.content)


_KEPT: set[Any] = set()  # the tasks these agents leave running (asyncio keeps only weak references)


async def streams_with_openai(inp: Any) -> str:
    """A Python agent that streams its model's answer through the openai client."""
    stream = await _client().chat.completions.create(model=MODEL, stream=True,
                                                     messages=[{"role": "user", "content": "hello"}])
    return "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])


async def streams_with_openai_helper(inp: Any) -> str:
    """The same through the client's own stream helper (``chat.completions.stream``), as openai's
    README streams: it reads the chunks into a completion itself."""
    async with _client().chat.completions.stream(model=MODEL,
                                                 messages=[{"role": "user", "content": "hello"}]) as stream:
        answer = await stream.get_final_completion()
    return str(answer.choices[0].message.content or "")


REVIEWING = threading.Event()  # set when langgraph_hangs_after_its_model reaches its own hanging step


def langgraph_hangs_after_its_model(tools: list[Any]) -> Any:
    """A LangGraph agent whose model node asks its model (LiteLLM, which keeps tasks of its own
    after the call) and whose next node hangs in the team's own code: the agent's failure."""
    import asyncio

    import litellm
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    async def agent(state: MessagesState) -> dict[str, Any]:
        answer = await litellm.acompletion(
            model=f"openai/{MODEL}", api_base=os.environ["SIMLAB_T_ROUGH_URL"], num_retries=0,
            api_key=os.environ["OPENAI_API_KEY"], messages=[{"role": "user", "content": "hello"}])
        return {"messages": [AIMessage(answer.choices[0].message.content or "")]}

    async def review(state: MessagesState) -> dict[str, Any]:
        REVIEWING.set()  # its model's answer is in: a test's clock may run on
        await asyncio.Event().wait()  # the team's own step, waiting for something that never comes
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("review", review)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "review")
    graph.add_edge("review", END)
    return graph.compile()
