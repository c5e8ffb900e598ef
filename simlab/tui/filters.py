"""Which trials a list shows: failed only, a verdict, how it ended (termination), a failing check, a
failure mode, a search."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from simlab.tui.rows import TrialRow

__all__ = [
    "UNGRADED",
    "TrialFilter",
    "apply",
    "check_counts",
    "mode_counts",
    "termination_counts",
    "verdict_counts",
]

UNGRADED = "not graded"


@dataclass(frozen=True)
class TrialFilter:
    scenario: str | None = None
    failed_only: bool = False
    verdict: str | None = None
    termination: str | None = None
    check: str | None = None
    mode: str | None = None  # a failure mode (transcript/blame.py)
    query: str = ""
    hits: frozenset[str] | None = None  # unit ids where ``query`` was found
    allowed: frozenset[str] = frozenset()  # the run's allow_unjudged: what "failed only" counts as passed

    def matches(self, row: TrialRow) -> bool:
        if self.scenario is not None and row.scenario_id != self.scenario:
            return False
        if self.failed_only and not row.failed(self.allowed):
            return False
        if self.verdict is not None and (row.verdict or UNGRADED) != self.verdict:
            return False
        if self.termination is not None and row.termination != self.termination:
            return False
        if self.check is not None and self.check not in row.hard_failed + row.soft_failed:
            return False
        if self.mode is not None and row.failure_mode != self.mode:
            return False
        return self.hits is None or row.unit_id in self.hits

    def with_(self, **changes: object) -> TrialFilter:
        return replace(self, **changes)  # type: ignore[arg-type]

    def cleared(self) -> TrialFilter:
        """Only the scenario (and the run's rule of what passed) is kept."""
        return TrialFilter(scenario=self.scenario, allowed=self.allowed)

    @property
    def active(self) -> bool:
        return self != self.cleared()

    def describe(self) -> list[str]:
        """One short label per active filter (data in them is shown literally by the caller)."""
        labels = []
        if self.failed_only:
            labels.append("failed only")
        if self.verdict is not None:
            labels.append(f"verdict {self.verdict}")
        if self.termination is not None:
            labels.append(f"ended {self.termination}")
        if self.check is not None:
            labels.append(f"failing {self.check}")
        if self.mode is not None:
            labels.append(f"mode {self.mode}")
        if self.hits is not None:
            labels.append(f"/{self.query}")
        return labels


def apply(rows: Iterable[TrialRow], flt: TrialFilter) -> list[TrialRow]:
    """Matching rows ordered by scenario, then trial number."""
    return sorted((r for r in rows if flt.matches(r)), key=lambda r: (r.scenario_id, r.trial, r.unit_id))


def verdict_counts(rows: Iterable[TrialRow]) -> Counter[str]:
    return Counter(r.verdict or UNGRADED for r in rows)


def termination_counts(rows: Iterable[TrialRow]) -> Counter[str]:
    return Counter(r.termination for r in rows)


def check_counts(rows: Iterable[TrialRow]) -> Counter[str]:
    return Counter(name for r in rows for name in set(r.hard_failed + r.soft_failed))


def mode_counts(rows: Iterable[TrialRow], allowed: Collection[str] = ()) -> Counter[str]:
    """Trials per failure mode, of the trials that did not pass by the run's rule (``allowed``: its
    allow_unjudged), as the report counts them: an unjudged trial counted as a pass is in no mode."""
    return Counter(r.failure_mode for r in rows if r.failure_mode is not None and r.failed(allowed))
