"""Two runs compared for the viewer: per scenario pass^k at one k, valid success with the
difference's 95 % interval and its verdict (``report/compare_runs.compare``, as ``simlab
compare``), then the trials whose verdict flipped between the runs. Pure: summaries and rows in."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from simlab.report.compare_runs import compare
from simlab.results.figures import Comparison, RunSummary
from simlab.results.summary import extend_curves
from simlab.transcript.verdicts import passes
from simlab.tui.rows import TrialRow

__all__ = ["Flip", "RunsDiff", "diff_runs"]


@dataclass
class Flip:
    unit_id: str
    base: str | None
    candidate: str | None


@dataclass
class RunsDiff:
    k: int
    comparison: Comparison
    pass_k: dict[str, tuple[float | None, float | None]]  # scenario → (base, candidate) pass^k (valid)
    flips: list[Flip]


def shared_k(base: RunSummary, cand: RunSummary) -> int:
    """The one k of the screen: the fewest trials a shared scenario has in either run (at least 1)."""
    shared = set(base.scenarios) & set(cand.scenarios)
    return max(1, min((min(base.scenarios[s].n, cand.scenarios[s].n) for s in shared), default=1))


def _passed(row: TrialRow, allowed: frozenset[str]) -> bool:
    return passes(row.verdict, row.unjudged_kinds, allowed)  # the one rule of what passed


def diff_runs(
    base: RunSummary,
    cand: RunSummary,
    base_rows: list[TrialRow],
    cand_rows: list[TrialRow],
    k: int | None = None,
    allow_unjudged: tuple[Collection[str], Collection[str]] = ((), ()),
) -> RunsDiff:
    """The comparison (pins that differ are listed in it, not refused: the screen warns), pass^k of
    each shared scenario at ``k`` (default ``shared_k``), and the trials (same unit id) that passed
    in one run and not in the other (an unjudged trial passes where its run's ``allow_unjudged``
    lets it, as in the figures)."""
    comparison = compare(base, cand, allow_different_pins=True)
    k = k or shared_k(base, cand)
    for summary in (base, cand):
        extend_curves(summary, k)
    pass_k = {
        row.scenario: (
            base.scenarios[row.scenario].valid.pass_hat_k.get(k),
            cand.scenarios[row.scenario].valid.pass_hat_k.get(k),
        )
        for row in comparison.scenarios
    }
    allow_base, allow_cand = (frozenset(a) for a in allow_unjudged)
    before = {r.unit_id: r for r in base_rows}
    flips = [
        Flip(r.unit_id, before[r.unit_id].verdict, r.verdict)
        for r in cand_rows
        if r.unit_id in before and _passed(before[r.unit_id], allow_base) != _passed(r, allow_cand)
    ]
    return RunsDiff(k=k, comparison=comparison, pass_k=pass_k, flips=flips)
