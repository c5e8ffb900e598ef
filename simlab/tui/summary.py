"""The viewer's figures per scenario and per run, as trials arrive: the report's own figures.

A scenario's graded figures are the report's ``ScenarioFigures``, made by the report's
``ScenarioTally`` (``results/summary.py``) from the same counts, with the run's ``allow_unjudged``
applied as ``simlab report`` applies it: the viewer and the report cannot disagree. What only a
live view has is counted beside them: the trials planned, the trials not graded (yet) and how they
ended, and the cost known so far. Ungraded trials (verdict None) count in no figure: a run nobody
graded has no pass^k, only termination reasons.

A refresh costs what changed, not the run's size: ``LiveProgress`` adds only the rows read since
the last refresh, and a scenario's figures are made again only when it got new trials.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from simlab.results.figures import ScenarioFigures
from simlab.results.summary import ScenarioTally, counts_as_pass, known_sum, rate, suite_point
from simlab.tui.rows import TrialRow

__all__ = [
    "LiveProgress",
    "RunOverview",
    "ScenarioProgress",
    "k_columns",
    "screen_k",
    "summarize",
    "summarize_run",
]


@dataclass
class ScenarioProgress:
    """One scenario so far: its planned and indexed trials, and the report's tally of the graded ones."""

    scenario_id: str
    planned: int = 0
    trials: int = 0
    goal_reached: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    costs: list[float | None] = field(default_factory=list)
    tally: ScenarioTally = field(default_factory=ScenarioTally)
    _figures: dict[tuple[int, ...], tuple[int, ScenarioFigures]] = field(default_factory=dict, repr=False)

    def add(self, row: TrialRow, allowed: frozenset[str]) -> None:
        self.trials += 1
        self.reasons[row.termination] += 1
        self.goal_reached += row.termination == "goal_reached"
        self.costs.append(row.cost_usd)
        verdict = row.verdict
        if verdict is None:
            return
        allow = verdict == "unjudged" and counts_as_pass(verdict, row.unjudged_kinds, allowed)
        self.tally.add(
            "pass" if allow else verdict,
            row.termination,
            row.cost_usd,
            persona_id=row.persona_id,
            policy_violations=row.policy_violations,
            counted_as_pass=allow,
        )

    @property
    def graded(self) -> int:
        return self.tally.n

    @property
    def passed(self) -> int:
        return self.tally.verdicts.get("pass", 0)

    @property
    def valid_n(self) -> int:
        """Trials that passed or failed: what pass^k is computed over."""
        return self.tally.valid_n

    def figures(self, ks: Iterable[int]) -> ScenarioFigures | None:
        """The report's figures of this scenario, pass^k at ``ks``; None while nothing is graded.
        Kept until the scenario gets another trial (read them, never change them)."""
        if not self.graded:
            return None
        key = tuple(ks)
        kept = self._figures.get(key)
        if kept is None or kept[0] != self.trials:
            if len(self._figures) > 4:  # the k's shown change with the width and the run's size
                self._figures.clear()
            kept = self._figures[key] = (self.trials, self.tally.figures(key))
        return kept[1]

    @property
    def cost(self) -> float | None:
        return known_sum(self.costs)


class LiveProgress:
    """Scenario id → progress of one run, kept up to date with its index's rows: each ``update``
    adds only the rows read since the last one (the index starts a new list when it reads the
    file again from the start, and then so does this)."""

    def __init__(self, planned: dict[str, int] | None = None, allow_unjudged: Collection[str] = ()) -> None:
        self.planned = dict(planned or {})
        self.allowed = frozenset(allow_unjudged)
        self._rows: Sequence[TrialRow] | None = None
        self._done = 0
        self.scenarios: dict[str, ScenarioProgress] = {}

    def update(self, rows: Sequence[TrialRow]) -> dict[str, ScenarioProgress]:
        if rows is not self._rows:
            self._rows, self._done = rows, 0
            self.scenarios = {sid: ScenarioProgress(sid, planned=n) for sid, n in self.planned.items()}
        end = len(rows)  # rows may grow meanwhile (the index's thread): the next update adds the rest
        for row in rows[self._done : end]:
            progress = self.scenarios.get(row.scenario_id)
            if progress is None:
                progress = self.scenarios[row.scenario_id] = ScenarioProgress(row.scenario_id)
            progress.add(row, self.allowed)
        self._done = end
        return self.scenarios


def summarize(
    rows: Sequence[TrialRow], planned: dict[str, int] | None = None, allow_unjudged: Collection[str] = ()
) -> dict[str, ScenarioProgress]:
    """Scenario id → progress; planned scenarios come first (manifest order) even with no trial yet.
    ``allow_unjudged``: the run's own list (``run.json``), as the report reads it."""
    return LiveProgress(planned, allow_unjudged).update(rows)


def k_columns(scenarios: Iterable[ScenarioProgress], limit: int = 4) -> list[int]:
    """Which pass^k columns to show: 1..limit, and the largest k any scenario supports."""
    top = max((s.valid_n for s in scenarios), default=0)
    ks = list(range(1, min(top, limit) + 1))
    return ks + [top] if top > limit else ks


@dataclass
class RunOverview:
    """A run's figures on one line (the runs list, the scenarios screen's header)."""

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
    unjudged: int = 0  # not counted as passes
    unjudged_as_pass: int = 0  # counted as passes (allow_unjudged)
    pass_k_scenarios: int = 0  # the scenarios that define pass^k (n ≥ k) so far


def screen_k(progress: dict[str, ScenarioProgress]) -> int:
    """The one k a screen shows for a run, fixed while the run is written: the smallest number of
    trials the run plans for a scenario (the suite's k), or, for a run without a plan, the
    smallest number of valid trials a graded scenario has."""
    planned = [s.planned for s in progress.values() if s.planned]
    if planned:
        return min(planned)
    return min((s.valid_n for s in progress.values() if s.valid_n), default=0)


def summarize_run(progress: dict[str, ScenarioProgress], k: int | None = None) -> RunOverview:
    """Suite figures: pass^k is the report's suite pass^k (the mean over the scenarios that define
    it), at ``k`` (default ``screen_k``: the same k however many trials have arrived)."""
    values = list(progress.values())
    graded = [s for s in values if s.valid_n]
    k = screen_k(progress) if k is None else k
    figures = [f for s in graded if (f := s.figures(sorted({1, k or 1}))) is not None]
    cost = known_sum([c for s in values for c in s.costs])
    passes, total_graded = sum(s.passed for s in values), sum(s.graded for s in values)
    point = suite_point(figures, "valid", k) if k and figures else None
    return RunOverview(
        trials=sum(s.trials for s in values),
        graded=total_graded,
        scenarios=len(values),
        k=k,
        pass_k=point.pass_hat_k if point else None,
        pass_k_scenarios=point.scenarios if point else 0,
        pass_1=suite_point(figures, "valid", 1).pass_hat_k if figures else None,
        raw_pass_1=rate(passes, total_graded).rate,
        invalid=sum(s.tally.verdicts.get("invalid", 0) for s in values),
        error=sum(s.tally.verdicts.get("error", 0) for s in values),
        unjudged=sum(s.tally.verdicts.get("unjudged", 0) for s in values),
        unjudged_as_pass=sum(s.tally.counted_as_pass for s in values),
        cost=cost,
    )
