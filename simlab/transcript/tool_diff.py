"""How one turn's tool calls differ between a recorded transcript and a live one: the replay
simulator's divergence test and ``simlab compare``'s first difference share it (it lives here so
that the report layer needs no simulator)."""

from __future__ import annotations

import json
from typing import Any

from simlab.transcript.model import ToolCall, Transcript


def turn_calls(events: list[Any], turn: int) -> list[str]:
    """The tool calls of ``turn`` as `name({sorted JSON arguments})`, in order."""
    out = []
    for e in events:
        if isinstance(e, ToolCall) and e.turn == turn:
            args = (
                json.dumps(e.arguments, sort_keys=True, default=str)
                if e.arguments is not None
                else e.raw_arguments
            )
            out.append(f"{e.name}({args})")
    return out


def tool_difference(recorded: Transcript, live: list[Any], turn: int) -> str | None:
    """How the agent's tool calls in ``turn`` differ from the recording's, or None when they match."""
    was, now = turn_calls(recorded.events, turn), turn_calls(live, turn)
    if was == now:
        return None
    for i, (a, b) in enumerate(zip(was, now)):
        if a != b:
            return f"tool call {i + 1} was {a}, now {b}"
    if len(was) > len(now):
        return f"the recording made {len(was)} tool calls, the agent {len(now)}: {was[len(now)]} is missing"
    return f"the recording made {len(was)} tool calls, the agent {len(now)}: {now[len(was)]} is new"
