"""Where two versions first differ, trial by trial (``simlab compare``).

Why turn by turn: a replay run (``run --replay``) feeds the candidate the base's user turns, so the
first turn whose tool calls or reply differ is where the new agent left the old one's path. A
replayed trial records that turn itself (``Transcript.replay``); for other pairs of runs the same
unit ids are compared event by event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simlab.runner.store import RunStore
from simlab.transcript import AgentMessage, Transcript, UserMessage
from simlab.transcript.tool_diff import tool_difference


def _text(events: list[Any], kind: type[UserMessage] | type[AgentMessage], turn: int) -> str | None:
    return next((str(e.text) for e in events if isinstance(e, kind) and e.turn == turn), None)


def first_difference(base: Transcript, candidate: Transcript) -> tuple[int, str] | None:
    """(turn, how) of the first live turn where the two differ, or None when they never do."""
    if candidate.replay is not None and candidate.replay.diverged_turn is not None:
        return candidate.replay.diverged_turn, candidate.replay.reason
    last = max([e.turn for e in base.events + candidate.events if hasattr(e, "turn")], default=0)
    for turn in range(1, last + 1):
        if _text(base.events, UserMessage, turn) != _text(candidate.events, UserMessage, turn):
            return turn, "the user's message differs"
        why = tool_difference(base, candidate.events, turn)
        if why is not None:
            return turn, why
        if _text(base.events, AgentMessage, turn) != _text(candidate.events, AgentMessage, turn):
            return turn, "the agent's reply differs"
    return None


def trial_differences(base: Path, candidate: Path) -> list[tuple[str, tuple[int, str] | None]]:
    """For each unit in both runs (in the candidate's order): where the two first differ."""
    recorded = {r.unit_id: r.transcript for r in RunStore(base).records()}
    out = []
    for record in RunStore(candidate).records():
        if record.unit_id in recorded:
            out.append((record.unit_id, first_difference(recorded[record.unit_id], record.transcript)))
    return out
