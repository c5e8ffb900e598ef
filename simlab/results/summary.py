"""A run's figures: per scenario, then averaged over scenarios, as a ``RunSummary`` (``figures.py``).

Raw figures count every trial; "valid" figures leave out invalid simulations, infrastructure
errors and unjudged trials (a hard check did not run). Both are shown, each with its n. Undefined
figures are None, never 0. An unjudged trial counts as a pass only where the run (or the suite
gating it) names the kinds of check that may stay unjudged (``allow_unjudged``), and the summary
says how many were counted so.

The models are built directly, not validated from dicts at the end: it is the cheaper of the two
(bench/README.md, section 5) and a misspelt figure is a type error, not a silent new key.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from simlab.results.dataset import pooled_tool_scores
from simlab.results.figures import (
    CheckError,
    CheckFailures,
    Divergence,
    ErrorCause,
    PassPoint,
    Percentiles,
    Rate,
    RunSummary,
    ScenarioFigures,
    SuiteFigures,
    SuitePassPoint,
    SuiteView,
    Unjudged,
    UnjudgedCheck,
    ViewFigures,
)
from simlab.results.frames import Results
from simlab.results.modes import failure_modes
from simlab.results.stats import (
    flake_class,
    mean_defined,
    pass_at_k,
    pass_curve,
    pass_hat_k,
    percentile,
    wilson,
)
from simlab.transcript.checks import VERDICTS
from simlab.transcript.verdicts import counts_as_pass  # defined with the verdicts

CURVE_MAX_K = 100
VALID = ("pass", "fail")


def rate(c: int, n: int) -> Rate:
    """``c`` of ``n`` with its Wilson 95 % interval."""
    interval = wilson(c, n)
    return Rate(
        c=c,
        n=n,
        rate=c / n if n else None,
        low=interval[0] if interval else None,
        high=interval[1] if interval else None,
    )


def known_sum(values: list[Any]) -> float | None:
    """A total that is known only when every part is (None or NaN: unknown); nothing is 0. The
    one rule for a run's, a scenario's and a trial's cost on every surface."""
    if any(v is None or v != v for v in values):  # None or NaN: unknown
        return None
    return float(sum(values))


def _curve(c: int, n: int, ks: Iterable[int]) -> dict[int, PassPoint]:
    """pass^k and pass@k at each of ``ks`` (``pass_curve`` is cached and shared: read, never kept)."""
    ks = list(ks)
    if ks == list(range(1, len(ks) + 1)):  # the whole curve from 1: one exact pass
        return {
            k: PassPoint(pass_hat_k=hat, pass_at_k=at) for k, (hat, at) in pass_curve(c, n, len(ks)).items()
        }
    return {k: PassPoint(pass_hat_k=pass_hat_k(c, n, k), pass_at_k=pass_at_k(c, n, k)) for k in ks}


@dataclass(slots=True)
class ScenarioTally:
    """One scenario's counts, row by row (rows as ``frames.collect`` gives them, verdicts already
    judged against ``allow_unjudged``): what its ``ScenarioFigures`` are made of. The report adds
    every row of a run; the viewer adds rows as they are read, and asks for figures at its k's."""

    persona_id: str | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    counted_as_pass: int = 0
    policy_violations: int = 0
    terminations: dict[str, int] = field(default_factory=dict)
    costs: list[Any] = field(default_factory=list)

    def add(
        self,
        verdict: str,
        termination: str,
        cost_usd: float | None,
        *,
        persona_id: str | None = None,
        policy_violations: int = 0,
        counted_as_pass: bool = False,
    ) -> None:
        """One graded trial (its verdict judged already: ``counts_as_pass``)."""
        if not self.costs:  # the first trial names the persona
            self.persona_id = persona_id
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        self.counted_as_pass += counted_as_pass
        self.policy_violations += bool(policy_violations)
        self.terminations[termination] = self.terminations.get(termination, 0) + 1
        self.costs.append(cost_usd)

    @classmethod
    def of(
        cls,
        verdicts: list[str],
        terminations: list[str],
        costs: list[Any],
        *,
        persona_id: str | None,
        policy_violations: int,
        counted_as_pass: int,
    ) -> ScenarioTally:
        """A scenario's tally from its trials' columns at once, as ``add`` row by row makes it."""
        return cls(
            persona_id=persona_id,
            verdicts=dict(Counter(verdicts)),
            counted_as_pass=counted_as_pass,
            policy_violations=policy_violations,
            terminations=dict(Counter(terminations)),
            costs=costs,
        )

    @property
    def n(self) -> int:
        return sum(self.verdicts.values())

    @property
    def valid_n(self) -> int:
        return sum(self.verdicts.get(v, 0) for v in VALID)

    def figures(self, ks: Iterable[int]) -> ScenarioFigures:
        """The scenario's figures, its pass^k and pass@k curves at ``ks`` (the report: 1 … top)."""
        ks = list(ks)
        n, c, valid_n = self.n, self.verdicts.get("pass", 0), self.valid_n
        cost = known_sum(self.costs)
        return ScenarioFigures(
            persona_id=self.persona_id,
            n=n,
            passes=c,
            verdicts={v: self.verdicts[v] for v in VERDICTS if self.verdicts.get(v)},
            raw=ViewFigures(success=rate(c, n), pass_k=_curve(c, n, ks)),
            valid=ViewFigures(success=rate(c, valid_n), pass_k=_curve(c, valid_n, ks)),
            flake_class=flake_class(c, valid_n),
            invalid=self.verdicts.get("invalid", 0),
            policy_violations=self.policy_violations,
            errors=self.verdicts.get("error", 0),
            unjudged=self.verdicts.get("unjudged", 0),
            unjudged_counted_as_pass=self.counted_as_pass,
            terminations=dict(self.terminations),
            cost_usd=cost,
            cost_per_success_usd=cost / c if cost is not None and c else None,
        )


def judged(row: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    """The row, with an unjudged verdict counted as a pass where ``counts_as_pass`` (copied, never
    changed)."""
    if not counts_as_pass(row.get("verdict"), row.get("unjudged_kinds"), allowed):
        return row
    return {**row, "verdict": "pass", "unjudged_allowed": True}


def summarize(
    results: Results,
    *,
    run_id: str | None = None,
    max_k: int | None = CURVE_MAX_K,
    allow_unjudged: Collection[str] = (),
) -> RunSummary:
    """The summary of one run from its results (see ``frames.collect``).

    The pass^k curves stop at ``max_k`` (default ``CURVE_MAX_K``): a scenario of 10,000 trials
    would otherwise store 10,000 points per curve. ``extend_curves`` adds any k later, exactly.
    ``allow_unjudged`` names the check kinds whose hard checks may stay unjudged: a trial left
    unjudged only by such checks counts as a pass (and is counted so, apart)."""
    tally, allowed = results.tally, frozenset(allow_unjudged)
    g = _Graded(results, allowed)  # ungraded trials: counted apart
    by: dict[str, list[int]] = {}
    for i, scenario in enumerate(g.col("scenario_id")):
        found = by.get(scenario)
        if found is None:
            found = by[scenario] = []
        found.append(i)
    verdicts, terminations, costs = g.verdicts, g.col("termination"), g.col("cost_usd")
    personas, violations = g.col("persona_id"), g.col("policy_violations")
    tallies = {
        sid: ScenarioTally.of(
            [verdicts[i] for i in at],
            [terminations[i] for i in at],
            [costs[i] for i in at],
            persona_id=personas[at[0]],
            policy_violations=sum(1 for i in at if violations[i]),
            counted_as_pass=len(g.counted.intersection(at)) if g.counted else 0,
        )
        for sid, at in by.items()
    }
    top = max((t.n for t in tallies.values()), default=0)
    ks = range(1, (min(max_k, top) if max_k else top) + 1)
    scenarios = {sid: t.figures(ks) for sid, t in sorted(tallies.items())}
    counts = {sid: (t.verdicts.get("pass", 0), t.n) for sid, t in tallies.items()}
    modes, more_modes = failure_modes(g.faults(), counts, min(top, CURVE_MAX_K))  # whatever max_k
    return RunSummary(
        run_id=run_id,
        trials=g.n,
        scenarios_count=len(scenarios),
        ungraded=len(results) - g.n,
        suite=_suite(g, scenarios, ks),
        scenarios=scenarios,
        violated_rules=_ranked({key: n for key, n in tally.failures.items() if key[1] == "policy"}),
        top_failing_checks=_ranked(tally.hard_failures, tally.infra_failures),
        attacks={
            category: rate(succeeded, attacked)
            for category, (attacked, succeeded) in sorted(tally.attacks.items())
        },
        not_run_checks=dict(sorted(tally.not_run.items(), key=lambda kv: -kv[1])),
        unjudged=Unjudged(
            trials=verdicts.count("unjudged") + len(g.counted),
            counted_as_pass=len(g.counted),
            allowed_kinds=sorted(allowed),
            checks=[
                UnjudgedCheck(name=name, kind=kind, trials=count)
                for (name, kind), count in sorted(tally.unjudged.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
        ),
        error_causes=error_causes(g.error_rows()),
        failure_modes=modes,
        failure_modes_more=more_modes,
        check_errors=[
            CheckError(name=name, kind=kind, hard=hard, count=count, reason=reason)
            for (name, kind), (count, hard, reason) in sorted(
                tally.errored.items(), key=lambda kv: (-kv[1][0], kv[0])
            )
        ],
        invalid_by_simulator=_invalid_by_simulator(g.col("simulator"), verdicts),
        divergence=_divergence(results),
        dataset=pooled_tool_scores(zip(verdicts, g.col_of(results.tools))),
        adk_criteria=_adk_criteria(results),
    )


class _Graded:
    """The graded trials of ``Results`` (a verdict: ungraded ones are counted apart), column by
    column, with their verdicts judged against ``allow_unjudged`` (``judged``): ``verdicts``,
    and ``counted``, the positions of the unjudged trials that count as passes."""

    def __init__(self, results: Results, allowed: frozenset[str]):
        self.results = results
        every = results.columns["verdict"]
        self.at: list[int] | None = None  # positions of the graded trials, None: all are
        if None in every:
            self.at = [n for n, v in enumerate(every) if v is not None]
        self.n = len(every) if self.at is None else len(self.at)
        self.verdicts: list[Any] = list(self.col("verdict"))
        self.counted: set[int] = set()
        if allowed and results.unjudged_kinds:
            where = {n: i for i, n in enumerate(self.at)} if self.at is not None else None
            for n, kinds in results.unjudged_kinds.items():
                i = n if where is None else where.get(n)
                if i is not None and counts_as_pass(self.verdicts[i], kinds, allowed):
                    self.verdicts[i] = "pass"
                    self.counted.add(i)

    def col(self, name: str) -> Sequence[Any]:
        return self.col_of(self.results.columns[name])

    def col_of(self, column: Sequence[Any]) -> Sequence[Any]:
        return column if self.at is None else [column[n] for n in self.at]

    def positions(self) -> Iterable[tuple[int, int]]:
        """``(position among the graded, position in the run)`` of each graded trial."""
        return enumerate(range(self.n) if self.at is None else self.at)

    def faults(self) -> list[dict[str, Any]]:
        """The rows ``modes.failure_modes`` groups: each trial that did not pass, with a failure mode."""
        modes, verdicts, scenarios = (
            self.results.columns["failure_mode"],
            self.verdicts,
            self.col("scenario_id"),
        )
        trials = self.results.columns["trial"]
        return [
            {
                "fault": self.results.fault(n),
                "verdict": verdicts[i],
                "scenario_id": scenarios[i],
                "trial": trials[n],
            }
            for i, n in self.positions()
            if modes[n] is not None and verdicts[i] != "pass"
        ]

    def error_rows(self) -> list[dict[str, Any]]:
        """The rows ``error_causes`` reads, of the trials that ended in an error."""
        c, errored = self.results.columns, self.results.errored_check
        return [
            {
                "verdict": "error",
                "errored_check": errored.get(n),
                "termination": c["termination"][n],
                "termination_detail": c["termination_detail"][n],
            }
            for i, n in self.positions()
            if self.verdicts[i] == "error"
        ]


def _divergence(results: Results) -> dict[str, Divergence]:
    """Per scenario: replayed trials (graded or not), how many diverged, the mean turn of the first
    divergence."""
    c = results.columns
    by: dict[str, list[int | None]] = {}
    for n, replayed in enumerate(c["replayed"]):
        if replayed:
            by.setdefault(c["scenario_id"][n], []).append(c["diverged_turn"][n])
    out = {}
    for sid, turns in sorted(by.items()):
        known = [t for t in turns if t is not None]
        out[sid] = Divergence(
            replayed=len(turns), diverged=len(known), mean_turn=sum(known) / len(known) if known else None
        )
    return out


def _adk_criteria(results: Results) -> dict[str, dict[str, Rate]]:
    """scenario → ADK criterion → graded trials that met its threshold of those it ran in (pass or fail)."""
    counts: dict[str, dict[str, list[int]]] = {}
    columns = results.columns
    for n, criteria in results.adk.items():
        if columns["verdict"][n] is None:
            continue
        for name, status in criteria.items():
            if status in ("pass", "fail"):
                entry = counts.setdefault(columns["scenario_id"][n], {}).setdefault(name, [0, 0])
                entry[0] += status == "pass"
                entry[1] += 1
    return {
        sid: {name: rate(c, n) for name, (c, n) in sorted(by.items())} for sid, by in sorted(counts.items())
    }


def _suite(g: _Graded, scenarios: dict[str, ScenarioFigures], ks: range) -> SuiteFigures:
    n = g.n
    verdicts = g.verdicts
    passes = verdicts.count("pass")
    valid_n = passes + verdicts.count("fail")
    cost = known_sum(list(g.col("cost_usd")))
    calls = g.col("judge_calls")
    judged_costs = [cost for cost, called in zip(g.col("judge_cost_usd"), calls) if called]
    tokens = [
        _tokens(a, b, c, d)
        for a, b, c, d in zip(
            *(
                g.col(f"{role}_{f}")
                for role in ("agent", "simulator")
                for f in ("input_tokens", "output_tokens")
            )
        )
    ]
    return SuiteFigures(
        raw=SuiteView(
            success=rate(passes, n), pass_k={k: suite_point(scenarios.values(), "raw", k) for k in ks}
        ),
        valid=SuiteView(
            success=rate(passes, valid_n), pass_k={k: suite_point(scenarios.values(), "valid", k) for k in ks}
        ),
        invalid_rate=rate(verdicts.count("invalid"), n),
        error_rate=rate(verdicts.count("error"), n),
        unjudged_rate=rate(verdicts.count("unjudged"), n),
        loop_rate=rate(sum(1 for loop in g.col("loop") if loop), n),
        policy_violation_rate=rate(sum(1 for v in g.col("policy_violations") if v), n),
        cost_usd=cost,
        cost_per_success_usd=cost / passes if cost is not None and passes else None,
        judge_calls=int(sum(c or 0 for c in calls)),
        judge_cost_usd=known_sum(judged_costs) if judged_costs else None,
        tokens=_percentiles(tokens),
        latency_s=_percentiles(list(g.col("duration_s"))),
        retries=int(sum(r or 0 for r in g.col("retries"))),
        retry_wait_s=float(sum(w or 0 for w in g.col("retry_wait_s"))),
        terminations=_count(g.col("termination")),
        flake_classes=_count(s.flake_class for s in scenarios.values()),
    )


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def error_causes(rows: list[dict[str, Any]], top: int = 5) -> list[ErrorCause]:
    """Why trials ended as infrastructure errors, most common first: the termination's detail, or
    for a trial ended normally the hard check that could not be decided. Causes that differ only in
    their numbers (retries, seconds) are one cause, shown as first seen."""
    causes: dict[str, list[Any]] = {}
    for r in rows:
        if r["verdict"] != "error":
            continue
        text = (
            (r.get("errored_check") if r.get("termination") != "error" else None)
            or r.get("termination_detail")
            or r.get("termination")
            or "unknown"
        )
        entry = causes.setdefault(_NUMBERS.sub("#", str(text)), [0, str(text)])
        entry[0] += 1
    ranked = sorted(causes.values(), key=lambda e: -e[0])[:top]
    return [ErrorCause(cause=text, trials=count) for count, text in ranked]


def _tokens(a: Any, b: Any, c: Any, d: Any) -> float | None:
    """A trial's tokens, agent's and simulator's, in and out; None when any is unknown (None or NaN)."""
    if a is None or b is None or c is None or d is None or a != a or b != b or c != c or d != d:
        return None
    return float(a + b + c + d)


def _percentiles(values: list[Any]) -> Percentiles:
    known = [float(v) for v in values if v is not None and v == v]
    return Percentiles(
        p50=percentile(known, 50),
        p95=percentile(known, 95),
        known=len(known),
        unknown=len(values) - len(known),
    )


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        if v is not None:
            out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _ranked(
    failures: dict[tuple[str, str], int], infra: dict[tuple[str, str], int] | None = None
) -> list[CheckFailures]:
    """Failing checks, most failures first (ties by name), with how many of the failures were in
    trials that ended in an infrastructure error."""
    ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))
    return [
        CheckFailures(
            name=name, kind=kind, failures=count, in_error_trials=(infra or {}).get((name, kind), 0)
        )
        for (name, kind), count in ranked
    ]


def suite_point(scenarios: Iterable[ScenarioFigures], view: str, k: int) -> SuitePassPoint:
    """The suite's pass^k and pass@k at ``k``: the mean over the scenarios that define it."""
    points = [s.view(view).pass_k[k] for s in scenarios]
    return SuitePassPoint(
        pass_hat_k=mean_defined([p.pass_hat_k for p in points]),
        pass_at_k=mean_defined([p.pass_at_k for p in points]),
        scenarios=sum(p.pass_hat_k is not None for p in points),
    )


def extend_curves(summary: RunSummary, k: int) -> None:
    """Add pass^k and pass@k at ``k`` to every curve of ``summary`` (a gate may ask beyond the
    stored curves), computed exactly from each scenario's counts: None where a scenario has fewer
    than k trials (undefined). The curves stay whole from k = 1 up to ``CURVE_MAX_K``: the points
    between the stored curve's end and ``k`` are added too, so every k a report shows
    (``report/fmt.shown_ks``, at most the largest) is on the curve; beyond ``CURVE_MAX_K`` only
    ``k`` itself is added."""
    have = summary.suite.raw.pass_k
    if k in have:
        return
    end = max(have, default=0)
    ks = [j for j in range(end + 1, min(k, CURVE_MAX_K) + 1)] + ([k] if k > CURVE_MAX_K else [])
    for figures in summary.scenarios.values():
        for view in (figures.raw, figures.valid):
            view.pass_k.update(_curve(view.success.c, view.success.n, ks))
    for name in ("raw", "valid"):
        curve = summary.suite.view(name).pass_k
        curve.update({j: suite_point(summary.scenarios.values(), name, j) for j in ks})


def _invalid_by_simulator(simulators: Sequence[str], verdicts: list[str]) -> dict[str, Rate]:
    groups: dict[str, list[str]] = {}
    for simulator, verdict in zip(simulators, verdicts):
        groups.setdefault(simulator, []).append(verdict)
    return {sim: rate(v.count("invalid"), len(v)) for sim, v in groups.items()}
