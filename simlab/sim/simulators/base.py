"""What every simulator gets and gives, and the control signals in a user's text."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from simlab.specs import Persona, Scenario
from simlab.transcript import Pin

SignalName = Literal["stop", "give_up", "transfer"]
SIGNALS: dict[str, SignalName] = {
    "###STOP###": "stop",
    "###GIVE_UP###": "give_up",
    "###TRANSFER###": "transfer",
}
_SIGNAL_RE = re.compile(r"#{2,3}\s*(STOP|GIVE[_ ]UP|TRANSFER)\s*#{2,3}", re.IGNORECASE)


def split_signal(text: str) -> tuple[str, SignalName | None]:
    """The message without control signals, and the first signal found (if any)."""
    found: SignalName | None = None
    match = _SIGNAL_RE.search(text)
    if match:
        found = SIGNALS["###" + match.group(1).upper().replace(" ", "_") + "###"]
    return " ".join(_SIGNAL_RE.sub(" ", text).split()) if match else text.strip(), found


@dataclass
class SimView:
    """What the simulated user can see: the conversation, never the environment."""

    scenario: Scenario
    persona: Persona
    messages: list[dict[str, Any]]  # {"role": "user"|"assistant", "content": str}; user = the simulator
    seed: int
    turn: int
    record: Callable[[Any], None] | None = None  # appends an event (a ModelCall) to the transcript
    memory: dict[str, Any] = field(default_factory=dict)  # kept across the turns of one trial
    unit_id: str = ""  # the trial's unit id (a replay looks its recording up by it)
    events: list[Any] = field(
        default_factory=list
    )  # the transcript so far (a replay compares the agent's turns)

    @property
    def last_agent_message(self) -> str:
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                return str(message.get("content") or "")
        return ""


@dataclass
class UserTurn:
    text: str
    signal: SignalName | None = None
    why: str = ""  # why the simulator signalled, when it was not the model's own word (a backstop)
    ended: str = (
        ""  # the user has nothing left to say (a script ran out), said without a signal: what happened
    )


@runtime_checkable
class Simulator(Protocol):
    """Plays the user, one message at a time: the protocol every simulator meets (``rules``,
    ``scripted``, an LLM, or your own)."""

    def pin(self) -> Pin:
        """Kind, model or reference, and settings: recorded in every transcript."""
        ...

    async def next_message(self, view: SimView) -> UserTurn:
        """The user's next message (and a control signal, if any), from what the user can see."""
        ...
