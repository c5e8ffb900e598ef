"""What an agent under test gets and gives, one turn at a time: ``AgentInput`` in, ``AgentReply``
(or the reply text) out. ``Agent`` is the protocol every agent adapter meets; a plain Python
callable is wrapped by ``PythonAgent``. This is the public contract (``from simlab import
AgentInput``); everything an agent does to the world goes through ``inp.tools``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from simlab.llm.types import Message
from simlab.sim.tool_handle import ToolHandle
from simlab.transcript import Pin

__all__ = ["Agent", "AgentInput", "AgentReply"]


@dataclass
class AgentInput:
    """Everything an agent gets for one turn."""

    messages: list[Message]  # the conversation so far: {"role": "user"|"assistant", "content": str}
    context: dict[str, Any]  # the scenario's agent_context
    tools: ToolHandle
    policy: str
    seed: int
    turn: int
    memory: dict[str, Any] = field(default_factory=dict)  # kept across the turns of one trial
    record: Callable[[Any], None] | None = None  # appends an event (e.g. a ModelCall) to the transcript
    # the scenario's history (the conversation the trial started from) in OpenAI chat format, its tool
    # calls and results included; its plain messages are also the first of ``messages``
    history: list[Message] = field(default_factory=list)


@dataclass
class AgentReply:
    """The agent's answer for one turn: its text, and whether it handed the user to a human."""

    text: str
    transfer: bool = False  # the agent handed the conversation to a human


@runtime_checkable
class Agent(Protocol):
    """An agent under test: one ``respond`` per user turn, and the pin that says exactly what it is."""

    def pin(self) -> Pin:
        """Kind, model or reference, and settings (never secrets): recorded in every transcript."""
        ...

    async def respond(self, inp: AgentInput) -> AgentReply:
        """The reply to ``inp.messages[-1]``; tools are called through ``inp.tools``."""
        ...
