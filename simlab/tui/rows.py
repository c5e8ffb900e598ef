"""The viewer's entry for one trial: a ``TrialRow``, a view of the trial's typed head.

Every line is read through the storage layer's one reader (``runner/heads_tail.Tail``), which
gives each trial's ``transcript/head.TrialHead``: the head simlab stores at the front of the line,
validated, or computed from the whole record for a line without one. A row keeps the head's
figures the lists show, under the head's own names, and derives only what the lists display
(the failed checks, hard and soft; the kinds of hard check that did not run); it parses nothing.
It holds those few fields rather than the head itself: a ``TrialHead`` takes about 7 KB of
memory, a row about half a kilobyte, so a run of 100,000 trials stays small in the viewer.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from simlab.transcript.head import TrialHead
from simlab.transcript.verdicts import passes

__all__ = ["TrialRow"]

_NONE: frozenset[str] = frozenset()


@dataclass(slots=True)
class TrialRow:
    """A trial as the lists show it; ``offset``/``length`` address its line for the full parse."""

    offset: int
    length: int
    unit_id: str
    scenario_id: str
    trial: int
    verdict: str | None
    termination: str
    persona_id: str = ""
    user_turns: int = 0
    tool_calls: int = 0
    cost_usd: float | None = None
    policy_violations: int = 0
    check_count: int = 0
    hard_failed: tuple[str, ...] = ()  # the hard checks that failed (the head's ``failed``)
    soft_failed: tuple[str, ...] = ()  # the soft checks that failed (they only score)
    unjudged_kinds: frozenset[str] = frozenset()  # kinds of the hard checks that did not run
    failure_mode: str | None = None  # why it did not pass (transcript/blame.py); None for a pass
    first_fault_event: int | None = None  # where: the first faulty step's event

    @classmethod
    def of(cls, head: TrialHead, offset: int = 0, length: int = 0) -> TrialRow:
        """The row of a trial's head (the report's own figures); positional, and no pass over an
        empty list: the viewer makes 100,000 of them."""
        r, failed = head.row, head.failed
        return cls(
            offset,
            length,
            r.unit_id,
            r.scenario_id,
            r.trial,
            r.verdict,
            r.termination,
            r.persona_id,
            r.user_turns,
            r.tool_calls,
            r.cost_usd,
            r.policy_violations,
            r.check_count,
            tuple(name for name, _, hard in failed if hard) if failed else (),
            tuple(name for name, _, hard in failed if not hard) if failed else (),
            frozenset(kind for _, kind in head.unjudged) if head.unjudged else _NONE,
            r.failure_mode,
            r.first_fault_event,
        )

    def failed(self, allowed: Collection[str] = ()) -> bool:
        """Anything that did not pass by the one rule (``verdicts.passes``: an unjudged trial counts as
        a pass where the run's ``allow_unjudged`` names its kinds); ungraded: did not reach the goal."""
        if self.verdict is None:
            return self.termination != "goal_reached"
        return not passes(self.verdict, self.unjudged_kinds, allowed)
