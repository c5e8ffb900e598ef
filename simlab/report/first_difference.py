"""Where two trials first differ (``simlab compare``, and the viewer's compare screen, which only
phrases what this finds: one algorithm, so both name the same turn and step).

What counts: the live conversation, step by step in the order it happened: user messages, agent
replies, tool calls (name and sorted JSON arguments), signals, and last how the trial ended (its
termination reason). The first step that is not the same on both sides is the difference; its
turn is the earlier of the two steps' turns (where the two stopped being the same), its step the
place in that turn. Both sides end with their ending, so two trials of different lengths always
differ somewhere. The scenario's history (turn 0) is input, not behaviour: it is left out.

A replayed trial also records where it left its recording (``Transcript.replay``: the replay's own
test, tool calls only by default); that is the replay's figure (``summary.json``: ``divergence``),
not this one: this one compares what the two trials did, whichever two they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simlab.results.modes import plan_order
from simlab.runner.store import RunStore
from simlab.transcript import AgentMessage, Signal, ToolCall, Transcript, UserMessage

__all__ = ["Difference", "Step", "first_difference", "steps", "trial_differences"]


@dataclass(frozen=True)
class Step:
    """One step of a conversation: ``kind`` user | agent | tool | signal | end, and what it was
    (the text, ``name({arguments})``, ``role signal``, or the termination reason)."""

    turn: int
    kind: str
    what: str


@dataclass(frozen=True)
class Difference:
    """The first step where two trials differ: its turn, its place in that turn (1 = the first
    step), what each side did there, and how it differs (base → candidate) in words."""

    turn: int
    step: int
    base: Step
    candidate: Step
    how: str


def _call(event: ToolCall) -> str:
    if event.arguments is None:
        return f"{event.name}({event.raw_arguments})"
    return f"{event.name}({json.dumps(event.arguments, sort_keys=True, default=str)})"


def _step(event: Any) -> Step | None:
    if isinstance(event, UserMessage):
        return Step(event.turn, "user", event.text)
    if isinstance(event, AgentMessage):
        return Step(event.turn, "agent", event.text)
    if isinstance(event, ToolCall):
        return Step(event.turn, "tool", _call(event))
    if isinstance(event, Signal):
        return Step(event.turn, "signal", f"{event.role} {event.signal}")
    return None


def steps(transcript: Transcript) -> list[Step]:
    """The live conversation's steps in order, its ending last."""
    out = [s for s in map(_step, transcript.events[transcript.history_events :]) if s is not None]
    return [*out, Step(out[-1].turn if out else 1, "end", transcript.termination.reason.value)]


_WHAT = {"user": "a user message", "agent": "an agent reply"}


def _what(step: Step) -> str:
    if step.kind == "tool":
        return f"tool call {step.what}"
    if step.kind == "signal":
        return f"the signal {step.what}"
    if step.kind == "end":
        return f"the end ({step.what})"
    return _WHAT[step.kind]


def _how(a: Step, b: Step, calls_before: int) -> str:
    """How ``b`` (candidate) differs from ``a`` (base), in words."""
    if a.kind != b.kind:
        return f"was {_what(a)}, now {_what(b)}"
    if a.kind == "tool":
        return f"tool call {calls_before + 1} was {a.what}, now {b.what}"
    if a.kind == "end":
        return f"it ended {a.what}, now {b.what}"
    if a.kind == "signal":
        return f"the signal was {a.what}, now {b.what}"
    return "the user's message differs" if a.kind == "user" else "the agent's reply differs"


def first_difference(base: Transcript, candidate: Transcript) -> Difference | None:
    """The first step where the two differ, or None when every step and the ending are the same."""
    sa, sb = steps(base), steps(candidate)
    for i, (a, b) in enumerate(zip(sa, sb)):
        if a != b:
            turn = min(a.turn, b.turn)
            before = [s for s in sa[:i] if s.turn == turn]
            calls = sum(s.kind == "tool" for s in before)
            return Difference(turn, len(before) + 1, a, b, _how(a, b, calls))
    return None  # both end with their ending: equal lengths, every step the same


def trial_differences(base: Path, candidate: Path) -> list[tuple[str, Difference | None]]:
    """For each unit in both runs, in plan order (``results/modes.plan_order``: not the order the
    trials were stored in): where the two first differ."""
    recorded = {r.unit_id: r.transcript for r in RunStore(base).records()}
    out = []
    for record in RunStore(candidate).records():
        if record.unit_id in recorded:
            t = record.transcript
            difference = first_difference(recorded[record.unit_id], t)
            out.append((plan_order(t.scenario_id, t.trial, record.unit_id), record.unit_id, difference))
    return [(unit, difference) for _, unit, difference in sorted(out, key=lambda item: item[0])]
