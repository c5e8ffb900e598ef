"""Compare two runs: per scenario and pooled, with intervals, so a regression is told from noise.

Success rates are compared over valid trials (pass or fail). The difference candidate − base gets
Newcombe's 95% interval for independent samples; "regressed" means the whole interval is below
zero (below −margin with a margin), "improved" the whole interval above zero.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path
from typing import Any

from simlab.errors import EXIT_GATE_FAILED, EXIT_INFRA, EXIT_OK, UsageError
from simlab.inert import one_line
from simlab.redact import mask_tree
from simlab.results.figures import (
    ChangeVerdict,
    Comparison,
    Count,
    FlakeChange,
    ModeChange,
    ModeStatus,
    Paired,
    PooledChange,
    RunSummary,
    ScenarioChange,
    ScenarioFigures,
)
from simlab.results.stats import Z95, diff_interval

PINNED = ("simulator", "judge")


def pin_conflicts(base: dict[str, Any], cand: dict[str, Any], by_design: Collection[str] = ()) -> list[str]:
    """Differences that make two runs incomparable: simulator, judge, shared scenario files; the
    pins named in ``by_design`` differ on purpose (a replay's simulator) and are not compared."""
    problems = []
    base, cand = mask_tree(base), mask_tree(cand)
    for key in PINNED:
        if key not in by_design and base.get(key) != cand.get(key):
            problems.append(f"{key}: base {base.get(key)!r}, candidate {cand.get(key)!r}")
    base_s, cand_s = base.get("scenarios", {}), cand.get("scenarios", {})
    for sid in sorted(set(base_s) & set(cand_s)):
        for key, what in (("sha256", "file"), ("persona_sha256", "persona file")):
            one, two = base_s[sid].get(key), cand_s[sid].get(key)
            if one != two:
                problems.append(f"scenario {sid}: {what} changed between the runs")
            elif base_s[sid].get(f"graded_{key}", one) != cand_s[sid].get(f"graded_{key}", two):
                problems.append(  # the same file played, not the same graded (runner/regrade.pin_graded)
                    f"scenario {sid}: graded with another version of its {what} in one run (simlab grade)"
                )
    return problems


def replays(candidate: RunSummary, base: Path, root: Path | None = None) -> bool:
    """Whether ``candidate`` is a ``run --replay`` of the run in folder ``base`` (the replay's pin
    names the recording's folder; a relative one is read from ``root``, default the working folder)."""
    simulator = candidate.pins.get("simulator") or {}
    if not isinstance(simulator, dict) or simulator.get("kind") != "replay":
        return False
    try:
        recording = Path(str(simulator.get("run")))
        if root is not None and not recording.is_absolute():
            recording = root / recording
        return recording.resolve() == base.resolve()
    except OSError:
        return False


def _verdict(interval: tuple[float, float, float] | None, margin: float = 0.0) -> ChangeVerdict:
    if interval is None:
        return "no data"
    _, low, high = interval
    if high < -margin:
        return "regressed"
    if low > margin:
        return "improved"
    return "within noise"


def detectable(c1: int, n1: int, c2: int, n2: int) -> float | None:
    """Smallest difference these sample sizes detect with 80% power at the 5% level (normal approx.)."""
    if not n1 or not n2:
        return None
    p = (c1 + c2) / (n1 + n2)
    p = min(max(p, 0.5 / (n1 + n2)), 1 - 0.5 / (n1 + n2))
    return (Z95 + 0.8416) * math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))


def _valid(s: ScenarioFigures) -> Count:
    return Count(c=s.valid.success.c, n=s.valid.success.n)


def compare(
    base: RunSummary,
    cand: RunSummary,
    *,
    allow_different_pins: bool = False,
    margin: float = 0.0,
    by_design: Collection[str] = (),
) -> Comparison:
    """Compare two summaries (``summary.json`` with their pins); ``by_design``: pins that differ on
    purpose (``pin_conflicts``), the others still must match unless ``allow_different_pins``."""
    conflicts = pin_conflicts(base.pins, cand.pins, by_design)
    for side, summary in (("base", base), ("candidate", cand)):
        if summary.completeness is not None and not summary.completeness.manifest:
            conflicts.append(f"the {side} run has no run.json: its pins are unknown")
        for pins in summary.mixed_pins:
            conflicts.append(f"the {side} run was resumed with --force over other pins ({pins})")
    if conflicts and not allow_different_pins:
        raise UsageError(
            "these runs are not comparable:\n"
            + "\n".join(f"  - {c}" for c in conflicts)
            + "\nRe-run one of them with the same pins, or pass --allow-different-pins."
        )
    shared = sorted(set(base.scenarios) & set(cand.scenarios))
    rows: list[ScenarioChange] = []
    pooled = [0, 0, 0, 0]
    for sid in shared:
        one, two = _valid(base.scenarios[sid]), _valid(cand.scenarios[sid])
        if one.n and two.n:  # compared on both sides: a scenario with no valid trial on one moves nothing
            pooled = [pooled[0] + one.c, pooled[1] + one.n, pooled[2] + two.c, pooled[3] + two.n]
        interval = diff_interval(one.c, one.n, two.c, two.n)
        before, after = base.scenarios[sid].flake_class, cand.scenarios[sid].flake_class
        rows.append(
            ScenarioChange(
                scenario=sid,
                base=one,
                candidate=two,
                difference=interval[0] if interval else None,
                low=interval[1] if interval else None,
                high=interval[2] if interval else None,
                verdict=_verdict(interval, margin),
                flipped=before != after and {before, after} == {"stable_pass", "stable_fail"},
                flake_class=FlakeChange(base=before, candidate=after),
                detectable=detectable(one.c, one.n, two.c, two.n),
            )
        )
    interval = diff_interval(*pooled)
    mdd = detectable(*pooled)
    diff = interval[0] if interval else None
    warnings = [
        f"{side} run: {w}"
        for side, summary in (("base", base), ("candidate", cand))
        for w in summary.warnings
    ]
    only_in_base = sorted(set(base.scenarios) - set(cand.scenarios))
    if only_in_base:
        warnings.append(base_only_phrase(only_in_base, len(rows)))
    if interval and mdd is not None and diff is not None and 0 < abs(diff) < mdd:
        warnings.append(
            f"n is too small to detect a difference of {abs(diff):.1%}: with these trial counts only "
            f"differences above about {mdd:.1%} can be told from noise; run more trials"
        )
    return Comparison(
        pins_differ=conflicts,
        only_in_base=only_in_base,
        only_in_candidate=sorted(set(cand.scenarios) - set(base.scenarios)),
        scenarios=rows,
        pooled=PooledChange(
            base=Count(c=pooled[0], n=pooled[1]),
            candidate=Count(c=pooled[2], n=pooled[3]),
            difference=diff,
            low=interval[1] if interval else None,
            high=interval[2] if interval else None,
            verdict=_verdict(interval, margin),
            detectable=mdd,
        ),
        paired=Paired(
            improved=[r.scenario for r in rows if r.difference is not None and r.difference > 0],
            regressed=[r.scenario for r in rows if r.difference is not None and r.difference < 0],
            unchanged=[r.scenario for r in rows if r.difference == 0],
            flipped=[r.scenario for r in rows if r.flipped],
            sign_test_p=_sign_test(rows),
        ),
        warnings=warnings,
        modes=mode_changes(base, cand),
    )


_ORDER = {"new": 0, "grew": 1, "unknown": 2, "shrank": 3, "fixed": 4, "same": 5}


def mode_changes(base: RunSummary, cand: RunSummary) -> list[ModeChange]:
    """Each failure mode of either run, new ones first, then those that grew (by share of trials)."""
    one = {m.mode: m for m in base.failure_modes}
    two = {m.mode: m for m in cand.failure_modes}
    out = []
    for mode in dict.fromkeys([*two, *one]):
        a, b = one.get(mode), two.get(mode)
        blame = (b or a).blame  # type: ignore[union-attr]
        count_a = a.trials if a else (None if base.failure_modes_more else 0)
        count_b = b.trials if b else (None if cand.failure_modes_more else 0)
        share_a = count_a / base.trials if count_a is not None and base.trials else None
        share_b = count_b / cand.trials if count_b is not None and cand.trials else None
        status: ModeStatus
        if count_a is None or count_b is None:
            status = "unknown"
        elif not count_a:
            status = "new"
        elif not count_b:
            status = "fixed"
        elif share_a is None or share_b is None or share_a == share_b:
            status = "same"
        else:
            status = "grew" if share_b > share_a else "shrank"
        out.append(
            ModeChange(
                mode=mode,
                blame=blame,
                base=count_a,
                candidate=count_b,
                base_share=share_a,
                candidate_share=share_b,
                status=status,
            )
        )
    return sorted(out, key=lambda m: (_ORDER[m.status], -max(m.candidate or 0, m.base or 0), m.mode))


def _sign_test(rows: list[ScenarioChange]) -> float | None:
    """Two-sided exact sign test over scenarios that moved; None when none did."""
    up = sum(1 for r in rows if (r.difference or 0) > 0)
    down = sum(1 for r in rows if (r.difference or 0) < 0)
    n = up + down
    if n == 0:
        return None
    tail = sum(math.comb(n, i) for i in range(0, min(up, down) + 1)) / 2**n
    return min(1.0, 2 * tail)


def compare_exit(
    result: Comparison,
    base: RunSummary,
    cand: RunSummary,
    *,
    fail_on_regression: bool,
    partial_ok: bool = False,
) -> tuple[int, str]:
    """``simlab compare``'s exit code and why: 3 when nothing could be compared (no shared scenario
    with valid trials): no data is never a pass. With ``fail_on_regression``: 1 when the pooled
    difference is a regression beyond noise (and the margin) on two runs that stand for their plans;
    3 when a run does not (``gates.run_problems``: incomplete, mixed, infrastructure errors over
    its own budget, as its report holds it, unjudged trials it does not allow), or when part of the
    base was not compared (``uncompared``: scenarios the candidate did not play, unless the part is
    accepted: ``part_accepted``), so a drop (or its absence) may be the missing trials' doing; 0
    otherwise."""
    if result.pooled.verdict == "no data":
        return EXIT_INFRA, "no data: no shared scenario has valid trials in both runs"
    from simlab.report.gates import decide, run_problems  # gates.py imports this module

    if not fail_on_regression:
        return EXIT_OK, f"{result.pooled.verdict} (exit codes of a regression: --fail-on-regression)"
    problems = [
        *same_run(base, cand),
        *(
            _side_problem(side, summary, p)
            for side, summary in (("base", base), ("candidate", cand))
            for p in run_problems(summary)
        ),
        *uncompared(result, partial_ok=part_accepted(cand, partial_ok)),
    ]
    code = decide(problems, ["fail" if result.pooled.verdict == "regressed" else "pass"])
    if problems:
        return code, "inconclusive: " + "; ".join(problems[:2])
    if code == EXIT_GATE_FAILED:
        return code, "regressed beyond noise"
    return code, f"{result.pooled.verdict}: no regression beyond noise"


def same_run(base: RunSummary, cand: RunSummary) -> list[str]:
    """Why a regression check of a run against itself proves nothing: the same run id on both
    sides (the run named twice, a suite naming its own run id, a copy of the run's folder). It
    cannot regress by construction, so the check did not run."""
    if base.run_id != cand.run_id:
        return []
    return [
        f"the baseline is run {one_line(base.run_id)} itself (the same run id): a run compared with itself "
        "cannot regress; name an earlier run as the baseline"
    ]


def part_accepted(cand: RunSummary, partial_ok: bool) -> bool:
    """Whether the user accepted by name that the candidate plays a part of the base's scenarios:
    ``compare --partial-ok``, or the candidate was played as a part of its suite with ``simlab run
    --partial-ok`` (as its own gates judge only that part)."""
    return partial_ok or bool(cand.completeness is not None and cand.completeness.partial_ok)


def uncompared(result: Comparison, *, partial_ok: bool = False) -> list[str]:
    """What of the base the regression check could not look at, so its verdict leaves it out: the
    shared scenarios that have no valid trial on a side, and the scenarios only the base has (the
    candidate did not play them), unless that part is accepted by name (``partial_ok``: ``compare
    --partial-ok``, a gated run played with ``--partial-ok``). Empty when all of the base was compared.
    Scenarios only the candidate has cannot regress: never a reason here."""
    rows = [
        f"{row.scenario} ({'base' if not row.base.n else 'candidate'} has no valid trial)"
        for row in result.scenarios
        if not row.base.n or not row.candidate.n
    ]
    problems = []
    if rows:
        more = f" and {len(rows) - 4} more" if len(rows) > 4 else ""
        problems.append(f"{len(rows)} shared scenarios were not compared: {', '.join(rows[:4])}{more}")
    if result.only_in_base and not partial_ok:
        problems.append(
            base_only_phrase(result.only_in_base, len(result.scenarios))
            + ": compare a run of the same scenarios, or accept the part by name (--partial-ok)"
        )
    return problems


def base_only_phrase(names: list[str], shared: int) -> str:
    """The one wording of the scenarios only the base run has (``names``; ``shared``: how many both
    have): none of them was compared; the terminal, the JSON's warnings and a gate all say it so."""
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return (
        f"{len(names)} of the base run's {len(names) + shared} scenarios were not "
        f"compared (the candidate did not play them): {', '.join(names[:4])}{more}"
    )


def _side_problem(side: str, summary: RunSummary, problem: str) -> str:
    done = summary.completeness
    if problem.startswith("incomplete") and done is not None and done.planned is not None:
        return f"the {side} run is incomplete ({done.finished} of {done.planned} planned trials)"
    return f"the {side} run: {problem}"
