"""The viewer's entry for one trial: a ``TrialRow``, made from the trial's head.

Every line is read through the storage layer's one reader (``runner/lines.py``), which gives the
head simlab stores at the front of each line (``transcript/head.TrialHead``, as the dict parsed
from its bytes), or computes it from the whole record for a line without one. The viewer keeps
only what its lists show and where the line is, so a run of 100,000 trials stays small in memory.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from simlab.transcript.verdicts import passes

__all__ = ["TrialRow", "row_from_head"]


@dataclass(slots=True)
class TrialRow:
    """A trial as the lists show it; ``offset``/``length`` address its line for the full parse."""

    offset: int
    length: int
    unit_id: str
    scenario_id: str
    trial: int
    verdict: str | None
    reason: str
    detail: str
    failed_checks: tuple[str, ...]  # hard checks that failed
    soft_failed: tuple[str, ...]  # soft checks that failed (they only score)
    check_count: int
    turns: int = 0
    tool_calls: int = 0
    model_calls: int = 0
    cost: float | None = None
    errors: int = 0
    persona_id: str | None = None
    policy_violations: int = 0
    unjudged_kinds: frozenset[str] = frozenset()  # kinds of the hard checks that did not run

    def failed(self, allowed: Collection[str] = ()) -> bool:
        """Anything that did not pass by the one rule (``verdicts.passes``: an unjudged trial counts as
        a pass where the run's ``allow_unjudged`` names its kinds); ungraded: did not reach the goal."""
        if self.verdict is None:
            return self.reason != "goal_reached"
        return not passes(self.verdict, self.unjudged_kinds, allowed)


def row_from_head(head: dict[str, Any], offset: int = 0, length: int = 0) -> TrialRow:
    """A row from a trial's head (a ``TrialHead`` dump): the report's own figures."""
    r = head["row"]
    unit_id = str(r.get("unit_id") or "?")
    failed = head.get("failed") or []
    return TrialRow(
        offset=offset, length=length, unit_id=unit_id,
        scenario_id=str(r.get("scenario_id") or unit_id.rsplit("#", 1)[0]), trial=int(r.get("trial") or 0),
        verdict=r["verdict"] if isinstance(r.get("verdict"), str) else None,
        reason=str(r.get("termination") or "unknown"), detail=str(r.get("termination_detail") or ""),
        failed_checks=tuple(str(name) for name, _, hard in failed if hard),
        soft_failed=tuple(str(name) for name, _, hard in failed if not hard),
        check_count=int(r.get("check_count") or 0),
        turns=r["user_turns"], tool_calls=r["tool_calls"], model_calls=r["model_calls"],
        cost=r.get("cost_usd"), errors=r["error_events"], persona_id=r.get("persona_id"),
        policy_violations=int(r.get("policy_violations") or 0),
        unjudged_kinds=frozenset(kind for _, kind in head.get("unjudged") or ()),
    )
