"""Agents that never stop on their own, one per framework, to show that every agent is bounded by
default: a LangGraph model that keeps calling a tool that does not exist (answered by LangGraph's
own ``ToolNode``, so simlab's tools never see it), and Agents SDK and pydantic-ai models that keep
looking up one more order. Their models are scripted code (the frameworks' own test models)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from examples.openai_agents_retail import _response

_ids = itertools.count(1)


def langgraph_unknown_tool(tools: list[Any]) -> Any:
    """Calls ``no_such_tool`` with new arguments each time: no repeat for the loop check to see."""
    return _stubborn_graph(tools, lambda n: {"attempt": n})


def langgraph_unknown_tool_same(tools: list[Any]) -> Any:
    """Calls ``no_such_tool`` with the same arguments each time."""
    return _stubborn_graph(tools, lambda n: {"order_id": "A123"})


def _stubborn_graph(tools: list[Any], args: Any) -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from examples.langgraph_retail import react_graph

    class Stubborn(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "stubborn"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Stubborn:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            n = next(_ids)
            call = {"id": f"call_{n}", "name": "no_such_tool", "args": args(n)}
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])

    return react_graph(tools, Stubborn()).compile()


def openai_agents_endless(tools: list[Any]) -> Any:
    from agents import Agent
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall

    class Endless(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            n = next(_ids)
            return _response(ResponseFunctionToolCall(
                type="function_call", name="lookup_order", arguments=json.dumps({"order_id": f"A{n}"}),
                call_id=f"call_{n}", id=f"fc_{n}"))

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return Agent(name="support", instructions="help", tools=tools, model=Endless())


def pydantic_ai_endless(tools: list[Any]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: Any, info: Any) -> ModelResponse:
        n = next(_ids)
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": f"A{n}"}, tool_call_id=f"call_{n}")])

    return Agent(FunctionModel(respond, model_name="endless"), tools=tools)


def pydantic_ai_bad_arguments(tools: list[Any]) -> Any:
    """Calls a tool with arguments that are not JSON, then a tool that does not exist."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: Any, info: Any) -> ModelResponse:
        n = next(_ids)
        step = sum(1 for m in messages if m.kind == "response")
        if step == 0:
            return ModelResponse(parts=[ToolCallPart("lookup_order", '{"order_id": A123', tool_call_id=f"c{n}")])
        if step == 1:
            return ModelResponse(parts=[ToolCallPart("no_such_tool", {"order_id": "A123"}, tool_call_id=f"c{n}")])
        return ModelResponse(parts=[TextPart("Sorry, I could not look that up.")])

    return Agent(FunctionModel(respond, model_name="clumsy"), tools=tools)
