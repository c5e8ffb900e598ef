"""The single-step probe behind ``expect.first_tool_call``: the agent's first decision for the
opening message, taken without running it.

Before the first real turn, the loop gives the agent the opening message with a throwaway memory
and a ``ProbeHandle`` instead of the trial's tools. An agent that can stop itself before a tool runs
(a LangGraph graph: ``interrupt_before`` its tool node) does so through its own ``probe`` method;
any other agent is stopped at the tool boundary: the handle notes the first call and raises
``ProbeStop`` instead of running it. Either way nothing reaches the environment, and the loop
records the decision as a ``PendingToolCall`` event. Its model calls are recorded (they were spent).
"""

from __future__ import annotations

import json
from typing import Any

from simlab.sim.agent_io import Agent, AgentInput
from simlab.sim.tool_handle import ToolHandle, ToolReply
from simlab.transcript import PendingToolCall

__all__ = ["ProbeHandle", "ProbeStop", "probe_first_step"]

TOOL_BOUNDARY = "tool_boundary"


class ProbeStop(BaseException):
    """Raised by ``ProbeHandle`` at the first tool call: a BaseException, so that the agent's own
    ``except Exception`` cannot swallow it."""

    def __init__(self, pending: PendingToolCall):
        self.pending = pending
        super().__init__(f"probe stopped before {pending.name}")


class ProbeHandle(ToolHandle):
    """Tools that never run: the first call is noted and stops the agent."""

    def call(self, tool: str, arguments: dict[str, Any] | str | None = None, /, **kwargs: Any) -> ToolReply:
        call_id = kwargs.pop("call_id", None) if arguments is not None else None
        if kwargs:
            arguments = {**(arguments if isinstance(arguments, dict) else {}), **kwargs}
        raise ProbeStop(pending_call(tool, arguments, call_id, TOOL_BOUNDARY, self.turn))


def pending_call(
    name: str, arguments: dict[str, Any] | str | None, call_id: str | None, stopped_at: str, turn: int
) -> PendingToolCall:
    """The event for a decided, unrun call, with its arguments as given (dict or JSON text)."""
    if isinstance(arguments, str):
        raw = arguments
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = None
        args = parsed if isinstance(parsed, dict) else None
    else:
        args = dict(arguments or {})
        raw = json.dumps(args, ensure_ascii=False, default=str)
    return PendingToolCall(
        turn=turn, name=name, arguments=args, raw_arguments=raw, call_id=call_id, stopped_at=stopped_at
    )


async def probe_first_step(agent: Agent, inp: AgentInput) -> PendingToolCall:
    """The agent's first decision for ``inp`` (whose ``tools`` must be a ``ProbeHandle``)."""
    own = getattr(agent, "probe", None)
    if own is not None:
        return await own(inp)
    try:
        reply = await agent.respond(inp)
    except ProbeStop as stop:
        return stop.pending
    return PendingToolCall(turn=inp.turn, stopped_at=TOOL_BOUNDARY, reply=reply.text)
