"""The retail demo agent built with pydantic-ai: one ``Agent`` with the domain's tools and
instructions built from its ``deps`` (simlab's TrialContext). Only the model is scripted: a
``FunctionModel`` (pydantic-ai's own test model) whose answers are the careful demo agent's decisions
(see ``retail_policy``), so it runs offline; give it ``"openai:gpt-4.1"`` and nothing else changes.

    agent: {pydantic_ai: examples.pydantic_ai_retail:careful_agent}
    agent: {pydantic_ai: examples.pydantic_ai_retail:agent_skipping_policy_check}   # planted defect

Both are factories: simlab calls them with the domain's tools (``Tool``s bound to the trial).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from examples.retail_agents import NO_FAULTS, Faults
from examples.retail_policy import Reply, decide, read_context, system_prompt


def retail_policy_model(faults: Faults = NO_FAULTS) -> FunctionModel:
    """A FunctionModel that decides as the careful retail agent (with ``faults`` planted)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        conversation: list[dict[str, str]] = []
        done: list[tuple[str, str]] = []
        system, calls = "", 0
        for message in messages:
            if isinstance(message, ModelRequest):
                system = message.instructions or system
                for part in message.parts:
                    if isinstance(part, UserPromptPart):
                        conversation.append({"role": "user", "content": str(part.content)})
                        done = []
                    elif isinstance(part, ToolReturnPart):
                        content = part.content
                        done.append((part.tool_name, content if isinstance(content, str) else json.dumps(content)))
            else:
                for part in message.parts:
                    if isinstance(part, TextPart):
                        conversation.append({"role": "assistant", "content": part.content})
                    elif isinstance(part, ToolCallPart):
                        calls += 1
        step = decide(conversation, read_context(system), done, faults)
        usage = RequestUsage(input_tokens=0, output_tokens=0)  # scripted code, not a model: no tokens
        if isinstance(step, Reply):
            return ModelResponse(parts=[TextPart(step.text)], usage=usage)
        return ModelResponse(parts=[ToolCallPart(step.name, step.args, tool_call_id=f"call_{calls + 1}")], usage=usage)

    return FunctionModel(respond, model_name="retail-policy")


def _agent(tools: list[Any], faults: Faults) -> Agent[Any, str]:
    agent: Agent[Any, str] = Agent(retail_policy_model(faults), tools=tools)

    @agent.instructions
    def instructions(ctx: RunContext[Any]) -> str:
        return system_prompt(getattr(ctx.deps, "agent_context", {}))

    return agent


def careful_agent(tools: list[Any]) -> Agent[Any, str]:
    return _agent(tools, NO_FAULTS)


def agent_skipping_policy_check(tools: list[Any]) -> Agent[Any, str]:
    """The planted defect: refunds without calling check_refund_policy first."""
    return _agent(tools, Faults(skip_policy_check=True))


def agent_with_faults(faults: Faults) -> Any:
    """A factory of the agent with these faults planted (tests use it)."""
    return lambda tools: _agent(tools, faults)
