"""Failure modes of a run: its trials that did not pass, grouped by their signature
(``transcript/blame.py``), ranked by the trials they cost, each with its weight on the headline.

The weight is what the suite's pass^k (over all its trials: the headline's figure) would be had the
mode's trials passed: each scenario's passes grow by the mode's trials in it, and the suite's
figure is the mean over scenarios, exactly as the headline is computed (``summary.suite_point``).
"""

from __future__ import annotations

from typing import Any

from simlab.results.figures import FailureMode
from simlab.results.stats import mean_defined, pass_hat_k

__all__ = ["TOP_MODES", "WEIGHT_KS", "failure_modes", "plan_order"]

TOP_MODES = 20  # modes kept in summary.json; the rest are counted (RunSummary.failure_modes_more)
WEIGHT_KS = (1, 2, 3, 5, 8)  # the k's a mode's weight is given at, with the largest k of the run


def plan_order(scenario_id: str, trial: int, unit_id: str) -> tuple[str, int, str]:
    """Where a trial stands in its run's plan: by scenario, then trial number. The trial a mode is
    read by (its representative) is its first in plan order, not in the order trials were stored
    (they finish in any order, and a merge of shards stores them otherwise): every reader of the
    same trials names the same one."""
    return (scenario_id, trial, unit_id)


def failure_modes(
    rows: list[dict[str, Any]], counts: dict[str, tuple[int, int]], top_k: int
) -> tuple[list[FailureMode], int]:
    """(the top modes, how many more there are) from the summary's rows (``frames.collect``,
    already judged: an unjudged trial counted as a pass is a pass; each with its ``trial`` number);
    ``counts``: scenario → (passes, trials)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("fault") is not None and r["verdict"] != "pass":
            groups.setdefault(r["fault"][0], []).append(r)
    ranked = sorted(
        groups.items(), key=lambda kv: (-len(kv[1]), -len({r["scenario_id"] for r in kv[1]}), kv[0])
    )
    ks = sorted({k for k in WEIGHT_KS if k <= top_k} | ({top_k} if top_k else set()))
    return [_mode(name, members, counts, ks) for name, members in ranked[:TOP_MODES]], max(
        0, len(ranked) - TOP_MODES
    )


def _mode(
    name: str, members: list[dict[str, Any]], counts: dict[str, tuple[int, int]], ks: list[int]
) -> FailureMode:
    first = min(members, key=lambda r: plan_order(r["scenario_id"], r["trial"], r["fault"][2]))
    _, blame, unit_id, turn, event = first["fault"]
    verdicts: dict[str, int] = {}
    gained: dict[str, int] = {}  # scenario → passes gained
    for r in members:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        gained[r["scenario_id"]] = gained.get(r["scenario_id"], 0) + 1
    return FailureMode(
        mode=name,
        blame=blame,
        trials=len(members),
        scenarios=sorted(gained),
        verdicts=verdicts,
        representative=unit_id,
        first_fault_turn=turn,
        first_fault_event=event,
        without={k: _suite_pass_k(counts, gained, k) for k in ks},
    )


def _suite_pass_k(counts: dict[str, tuple[int, int]], gained: dict[str, int], k: int) -> float | None:
    return mean_defined(
        [pass_hat_k(c + gained.get(scenario, 0), n, k) for scenario, (c, n) in counts.items()]
    )
