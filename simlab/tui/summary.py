"""Figures per scenario and per run, from trial rows: pass^k, flake class, invalid and error counts.

Adjusted figures leave invalid simulations and infrastructure errors out (they say nothing about
the agent); the raw pass rate counts every graded trial. Ungraded trials (verdict None) count in
neither: a run nobody graded has no pass^k, only termination reasons.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from simlab.results.stats import FlakeClass, flake_class, mean_defined, pass_hat_k
from simlab.tui.scan import TrialRow

__all__ = ["RunSummary", "ScenarioSummary", "k_columns", "summarize", "summarize_run", "total_cost"]


@dataclass
class ScenarioSummary:
    scenario_id: str
    planned: int = 0
    trials: int = 0
    graded: int = 0
    passed: int = 0
    failed: int = 0
    invalid: int = 0
    error: int = 0
    unjudged: int = 0  # a hard check did not run: neither passed nor failed
    goal_reached: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    costs: list[float | None] = field(default_factory=list)
    pending: int = 0  # trials whose events (hence cost) are not read yet

    @property
    def adjusted_n(self) -> int:
        return self.passed + self.failed

    def pass_k(self, k: int) -> float | None:
        n = self.adjusted_n
        return pass_hat_k(self.passed, n, k) if n else None

    @property
    def raw_pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def flake(self) -> FlakeClass | None:
        return flake_class(self.passed, self.adjusted_n)

    @property
    def cost(self) -> tuple[float | None, bool]:
        return total_cost(self.costs)

    def add(self, row: TrialRow) -> None:
        self.trials += 1
        self.reasons[row.reason] += 1
        self.goal_reached += row.reason == "goal_reached"
        if row.detailed:
            self.costs.append(row.cost)
        else:
            self.pending += 1
        if row.verdict is None:
            return
        self.graded += 1
        if row.verdict == "pass":
            self.passed += 1
        elif row.verdict == "invalid":
            self.invalid += 1
        elif row.verdict == "error":
            self.error += 1
        elif row.verdict == "unjudged":
            self.unjudged += 1
        else:
            self.failed += 1


def total_cost(costs: list[float | None]) -> tuple[float | None, bool]:
    """(sum of the known costs, or None when none is known; whether every cost was known)."""
    known = [c for c in costs if c is not None]
    return (sum(known) if known else None), len(known) == len(costs)


def summarize(rows: Iterable[TrialRow], planned: dict[str, int] | None = None) -> dict[str, ScenarioSummary]:
    """Scenario id → summary; planned scenarios come first (manifest order) even with no trial yet."""
    out = {sid: ScenarioSummary(sid, planned=n) for sid, n in (planned or {}).items()}
    for row in rows:
        summary = out.get(row.scenario_id)
        if summary is None:
            summary = out[row.scenario_id] = ScenarioSummary(row.scenario_id)
        summary.add(row)
    return out


def k_columns(summaries: Iterable[ScenarioSummary], limit: int = 4) -> list[int]:
    """Which pass^k columns to show: 1..limit, and the largest k any scenario supports."""
    top = max((s.adjusted_n for s in summaries), default=0)
    ks = list(range(1, min(top, limit) + 1))
    return ks + [top] if top > limit else ks


@dataclass
class RunSummary:
    trials: int
    graded: int
    scenarios: int
    k: int
    pass_k: float | None
    pass_1: float | None
    raw_pass_1: float | None
    invalid: int
    error: int
    cost: float | None
    cost_complete: bool
    unjudged: int = 0
    cost_pending: bool = False


def summarize_run(summaries: dict[str, ScenarioSummary]) -> RunSummary:
    """Suite figures: pass^k is the mean over scenarios where it is defined, k the smallest number
    of usable trials any graded scenario has (so every graded scenario counts)."""
    values = list(summaries.values())
    graded = [s for s in values if s.adjusted_n]
    k = min((s.adjusted_n for s in graded), default=0)
    all_costs = [c for s in values for c in s.costs]
    cost, complete = total_cost(all_costs)
    total_graded = sum(s.graded for s in values)
    return RunSummary(
        trials=sum(s.trials for s in values), graded=total_graded, scenarios=len(values), k=k,
        pass_k=mean_defined([s.pass_k(k) for s in graded]) if k else None,
        pass_1=mean_defined([s.pass_k(1) for s in graded]) if graded else None,
        raw_pass_1=sum(s.passed for s in values) / total_graded if total_graded else None,
        invalid=sum(s.invalid for s in values), error=sum(s.error for s in values),
        cost=cost, cost_complete=complete, cost_pending=any(s.pending for s in values),
        unjudged=sum(s.unjudged for s in values),
    )
