"""An LLM as the agent under test: simlab drives its tool loop (call tools until it answers in
text, with a step cap), through any ``ChatModel`` (LiteLLM, or a test double)."""

from __future__ import annotations

import hashlib
from typing import Any

from simlab.llm.types import ChatModel, Message
from simlab.sim.agent_io import AgentInput, AgentReply
from simlab.sim.tool_handle import StopTrial
from simlab.transcript import ModelCall, Pin

__all__ = ["LLMAgent", "render_context"]


def render_context(context: dict[str, Any]) -> str:
    if not context:
        return ""
    lines = "\n".join(f"- {key}: {value}" for key, value in context.items())
    return f"\n\n# Context of this conversation\n{lines}"


class LLMAgent:
    """A tool-calling LLM: within one turn it calls tools until it answers in text (step cap)."""

    def __init__(
        self,
        model: ChatModel,
        *,
        system_prompt: str | None = None,
        max_steps: int = 10,
        transfer_tools: tuple[str, ...] = ("transfer_to_human",),
    ):
        self.model = model
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.transfer_tools = transfer_tools

    def pin(self) -> Pin:
        pin = self.model.pin()
        settings = {**pin.settings, "max_steps": self.max_steps}
        if self.system_prompt is not None:
            settings["system_prompt_sha256"] = hashlib.sha256(self.system_prompt.encode()).hexdigest()
        return Pin(kind="llm", ref=pin.ref, settings=settings)

    async def respond(self, inp: AgentInput) -> AgentReply:
        history: list[Message] = inp.memory.setdefault(
            "history",
            [
                {
                    "role": "system",
                    "content": (self.system_prompt or inp.policy) + render_context(inp.context),
                },
                *inp.history,  # a scenario's history: the conversation so far, tool calls included
            ],
        )
        history.append(inp.messages[-1])  # the user's newest message
        transferred = False
        for _ in range(self.max_steps):
            result = await self.model.chat(history, tools=inp.tools.schemas, seed=inp.seed)
            if inp.record:
                inp.record(ModelCall(turn=inp.turn, role="agent", model=self.model.model, usage=result.usage))
            if not result.tool_calls:
                text = result.text or ""
                history.append({"role": "assistant", "content": text})
                return AgentReply(text=text, transfer=transferred)
            history.append(
                {
                    "role": "assistant",
                    "content": result.text
                    or "",  # strict servers need a string here (see llm.client.wire_messages)
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in result.tool_calls
                    ],
                }
            )
            for call in result.tool_calls:
                reply = inp.tools.call(call.name, call.arguments, call_id=call.id)
                history.append({"role": "tool", "tool_call_id": call.id, "content": reply.as_text()})
                transferred = transferred or (reply.ok and call.name in self.transfer_tools)
            if transferred:
                return AgentReply(text=result.text or "", transfer=True)
        raise StopTrial("agent_loop", f"no text reply after {self.max_steps} tool-call rounds in one turn")
