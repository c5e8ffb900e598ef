"""The retail demo agent built with the OpenAI Agents SDK: a ``triage`` agent that hands every
conversation off to a ``support`` agent, which holds the domain's tools and instructions built
from the run's context. Only the model is scripted (``RetailPolicyModel``, an
``agents.models.interface.Model`` whose answers are the careful demo agent's decisions, see
``retail_policy``), so it runs offline; give the agents ``model="gpt-4.1"`` (or a ``LitellmModel``)
and nothing else changes.

    agent: {openai_agents: examples.openai_agents_retail:careful_agent}
    agent: {openai_agents: examples.openai_agents_retail:agent_skipping_policy_check}   # planted defect
    agent: {openai_agents: examples.openai_agents_retail:misrouting_agent}   # hands off to 'billing'

All are factories: simlab calls them with the domain's tools (``FunctionTool``s bound to the trial).
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, ModelResponse, RunContextWrapper, Usage
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from examples.retail_agents import NO_FAULTS, Faults
from examples.retail_policy import Reply, decide, read_context, system_prompt


class RetailPolicyModel(Model):
    """Hands off when it can (a triage agent); otherwise decides as the careful retail agent."""

    def __init__(self, faults: Faults = NO_FAULTS, hand_off_to: str | None = None):
        self.faults = faults
        self.hand_off_to = hand_off_to

    async def get_response(self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, *, previous_response_id: Any = None,
                           conversation_id: Any = None, prompt: Any = None) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        own_tools = {t.name for t in tools}  # a call to anything else (a handoff) is not this agent's
        calls = sum(1 for item in items if _get(item, "type") == "function_call")
        if self.hand_off_to is not None:
            name = next(h.tool_name for h in handoffs if h.tool_name.endswith(self.hand_off_to))
            return _response(ResponseFunctionToolCall(type="function_call", name=name, arguments="{}",
                                                      call_id=f"call_{calls + 1}", id=f"fc_{calls + 1}"))
        conversation, done, names = [], [], {}
        for item in items:
            kind, role = _get(item, "type"), _get(item, "role")
            if role == "user":
                conversation.append({"role": "user", "content": _text(_get(item, "content"))})
                done = []
            elif kind == "function_call":
                names[_get(item, "call_id")] = _get(item, "name")
            elif kind == "function_call_output" and names.get(_get(item, "call_id")) in own_tools:
                done.append((names.get(_get(item, "call_id")) or "", _text(_get(item, "output"))))
            elif role == "assistant":
                conversation.append({"role": "assistant", "content": _text(_get(item, "content"))})
        step = decide(conversation, read_context(system_instructions or ""), done, self.faults)
        if isinstance(step, Reply):
            return _response(ResponseOutputMessage(
                id=f"msg_{calls}", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text=step.text, annotations=[])]))
        return _response(ResponseFunctionToolCall(type="function_call", name=step.name, arguments=json.dumps(step.args),
                                                  call_id=f"call_{calls + 1}", id=f"fc_{calls + 1}"))

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the retail policy model does not stream")


def _response(item: Any) -> ModelResponse:
    # scripted code, not a model: no tokens
    return ModelResponse(output=[item], usage=Usage(requests=1, input_tokens=0, output_tokens=0, total_tokens=0),
                         response_id=None)


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_get(part, "text") or "") for part in content)
    return "" if content is None else str(content)


def instructions(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
    """The policy and the conversation's context (``ctx.context`` is simlab's TrialContext)."""
    return system_prompt(getattr(ctx.context, "agent_context", {}))


def _agents(tools: list[Any], faults: Faults, route_to: str = "support") -> Agent[Any]:
    support = Agent(name="support", instructions=instructions, tools=tools, model=RetailPolicyModel(faults))
    billing = Agent(name="billing", instructions=instructions, tools=tools, model=RetailPolicyModel(faults))
    return Agent(name="triage", instructions="Route the customer to the right colleague.", handoffs=[support, billing],
                 model=RetailPolicyModel(hand_off_to=route_to))


def careful_agent(tools: list[Any]) -> Agent[Any]:
    return _agents(tools, NO_FAULTS)


def agent_skipping_policy_check(tools: list[Any]) -> Agent[Any]:
    """The planted defect: refunds without calling check_refund_policy first."""
    return _agents(tools, Faults(skip_policy_check=True))


def agent_with_faults(faults: Faults) -> Any:
    """A factory of the agent with these faults planted (tests use it)."""
    return lambda tools: _agents(tools, faults)


def misrouting_agent(tools: list[Any]) -> Agent[Any]:
    """Triage hands off to billing instead of support (billing is just as capable here)."""
    return _agents(tools, NO_FAULTS, route_to="billing")
