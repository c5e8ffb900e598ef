"""The retail demo agent's decisions as a *model*: the brain of the scripted models that the
framework examples (``langgraph_retail``, ``openai_agents_retail``, ``pydantic_ai_retail``) plug into
real LangGraph graphs and SDK agents, so that they run offline and deterministically.

A real model reads the conversation and the tool results it was given and decides the next step: a
tool call, or a reply. ``decide`` does the same with ``RetailBot`` (the careful demo agent of
``retail_agents``): it replays the bot on this turn's conversation, answering the bot's tool calls
with the results the framework already fed back, and stops at the first call that has no result
yet: that call is the decision. The framework then runs the tool (through simlab's tools) and asks
again. ``Faults`` plant the same defects as in the Python demo agent (e.g. skipping
``check_refund_policy``).

The scenario's ``agent_context`` reaches the model as a real one gets it: as lines of the system
prompt (``render_context``), which ``read_context`` parses back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from examples.retail_agents import NO_FAULTS, Faults, RetailBot
from simlab.sim.agent_io import AgentInput
from simlab.sim.llm_agent import render_context
from simlab.sim.tool_handle import ToolReply

__all__ = ["POLICY", "Reply", "ToolRequest", "decide", "read_context", "system_prompt"]

POLICY = "You are the support agent of an online shop. Follow the refund policy; confirm before any refund."
CONTEXT_HEAD = "# Context of this conversation"


@dataclass
class ToolRequest:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reply:
    text: str


class _Decided(Exception):
    def __init__(self, request: ToolRequest):
        self.request = request


class _Replay:
    """Stands in for the tools: answers the bot's calls from the results already given back."""

    def __init__(self, done: list[tuple[str, str]]):
        self.done = done
        self.next = 0

    def call(self, tool: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> ToolReply:
        args = {**(arguments or {}), **kwargs}
        if self.next >= len(self.done):
            raise _Decided(ToolRequest(tool, args))
        name, text = self.done[self.next]
        self.next += 1
        if name != tool:
            raise RuntimeError(f"the conversation does not follow the retail policy model: it called {name}, "
                               f"the model would have called {tool}")
        return _reply(text)


def _reply(text: str) -> ToolReply:
    """A tool's text (``ToolReply.as_text``) back as the reply it was."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return ToolReply(True, text)
    if isinstance(value, dict) and set(value) == {"error"}:
        return ToolReply(False, error=str(value["error"]))
    return ToolReply(True, value)


def decide(conversation: list[dict[str, str]], context: dict[str, Any], done: list[tuple[str, str]],
           faults: Faults = NO_FAULTS) -> ToolRequest | Reply:
    """The next step of the retail agent. ``conversation``: the user's and the agent's texts so far
    (the newest user message last); ``done``: (tool, result text) of this turn's calls so far."""
    inp = AgentInput(messages=list(conversation), context=context, tools=_Replay(done),  # type: ignore[arg-type]
                     policy=POLICY, seed=0, turn=sum(m["role"] == "user" for m in conversation))
    try:
        reply = RetailBot(inp, faults).respond()
    except _Decided as decided:
        return decided.request
    return Reply(reply.text)


def system_prompt(context: dict[str, Any]) -> str:
    """The system prompt the example agents build: the policy and the conversation's context."""
    return POLICY + render_context(context)


def read_context(system: str) -> dict[str, Any]:
    """The ``- key: value`` lines after the context heading of a system prompt, values as YAML."""
    _, found, tail = system.partition(CONTEXT_HEAD)
    out: dict[str, Any] = {}
    for line in tail.splitlines() if found else []:
        key, sep, value = line.removeprefix("- ").partition(": ")
        if line.startswith("- ") and sep:
            out[key.strip()] = yaml.safe_load(value)
    return out
