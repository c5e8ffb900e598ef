"""The ``replay`` simulator: a frozen user. It plays the user turns of a recorded trial (of an
earlier run, or an imported production conversation) against the agent under test, turn by turn.

Why it watches the agent: a recorded user turn answers the recorded agent, so once the new agent
acts differently the next recorded turn may make no sense. With ``divergence: tools`` a turn
diverges when its tool calls (names and arguments, in order) differ from the recording's; the
replay then stops the trial (termination ``diverged``: the verdict comes from the checks on what
happened so far) or hands the user to another simulator for the rest. The first diverging turn is
recorded in the transcript (``Transcript.replay``) either way; ``never`` replays to the end.
"""

from __future__ import annotations

import json
from typing import Any

from simlab.sim.simulators.base import Simulator, SimView, UserTurn
from simlab.sim.tool_handle import StopTrial
from simlab.transcript import Pin, ReplayInfo, Signal, ToolCall, Transcript, UserMessage


def _calls(events: list[Any], turn: int) -> list[str]:
    out = []
    for e in events:
        if isinstance(e, ToolCall) and e.turn == turn:
            args = json.dumps(e.arguments, sort_keys=True, default=str) if e.arguments is not None else e.raw_arguments
            out.append(f"{e.name}({args})")
    return out


def tool_difference(recorded: Transcript, live: list[Any], turn: int) -> str | None:
    """How the agent's tool calls in ``turn`` differ from the recording's, or None when they match."""
    was, now = _calls(recorded.events, turn), _calls(live, turn)
    if was == now:
        return None
    for i, (a, b) in enumerate(zip(was, now)):
        if a != b:
            return f"tool call {i + 1} was {a}, now {b}"
    if len(was) > len(now):
        return f"the recording made {len(was)} tool calls, the agent {len(now)}: {was[len(now)]} is missing"
    return f"the recording made {len(was)} tool calls, the agent {len(now)}: {now[len(was)]} is new"


class ReplaySimulator(Simulator):
    """Replays ``recordings`` (by unit id) from run ``run``; ``fallback`` takes over after a divergence
    (None: the trial stops there)."""

    def __init__(self, recordings: dict[str, Transcript], *, run: str, divergence: str = "tools",
                 then: str = "stop", fallback: Simulator | None = None):
        if divergence not in ("never", "tools"):
            raise ValueError(f"divergence {divergence!r}: use never or tools")
        self.recordings, self.run, self.divergence, self.then, self.fallback = (
            recordings, run, divergence, then, fallback)

    def pin(self) -> Pin:
        settings: dict[str, Any] = {"run": self.run, "divergence": self.divergence, "then": self.then}
        if self.fallback is not None:
            settings["fallback"] = self.fallback.pin().model_dump(mode="json")
        return Pin(kind="replay", ref=self.run, settings=settings)

    async def next_message(self, view: SimView) -> UserTurn:
        recorded = self.recordings.get(view.unit_id)
        if recorded is None:
            raise StopTrial("error", f"run {self.run} has no recorded trial {view.unit_id} to replay")
        info = view.memory.get("replay")
        if info is None:
            info = view.memory["replay"] = ReplayInfo(run=self.run, unit_id=view.unit_id,
                                                      divergence=self.divergence, then=self.then)
        if info.diverged_turn is not None and self.fallback is not None:
            return await self.fallback.next_message(view)
        if view.turn > 1 and self.divergence == "tools":
            why = tool_difference(recorded, view.events, view.turn - 1)
            if why is not None:
                info.diverged_turn, info.reason = view.turn - 1, why
                if self.fallback is None:
                    raise StopTrial("diverged", f"the agent diverged from the recording at turn {view.turn - 1}: {why}")
                return await self.fallback.next_message(view)
        return recorded_turn(recorded, view.turn)


def recorded_turn(recorded: Transcript, turn: int) -> UserTurn:
    """The recorded user's message and signal of ``turn``; past the recording's end: stop."""
    text = next((e.text for e in recorded.events if isinstance(e, UserMessage) and e.turn == turn), "")
    signal = next((e.signal for e in recorded.events if isinstance(e, Signal) and e.role == "user" and e.turn == turn),
                  None)
    if not text and signal is None:
        return UserTurn(text="", signal="stop", why="the recording ends here")
    return UserTurn(text=text, signal=signal)
