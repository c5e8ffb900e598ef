"""Evaluate a suite's gates on a run. Exit codes: 0 held, 1 a gate failed, 3 inconclusive.

One rule, decided here (``decide``) for every entry point (``simlab gate``, ``run --suite``,
``compare --fail-on-regression``, ``simlab.Run.gate``): a run that cannot stand for the suite's
plan is inconclusive (3) whatever its figures, a failed gate included: the run is incomplete, not
the suite's plan (scenarios, trials per scenario; a part accepted with ``--partial-ok`` is said,
not refused), played or was graded with another version of a scenario or persona file than the
suite's now (each file's sha256 in ``run.json``), was graded without the graders the suite adds,
or with another simulator or judge than the suite's (or the project's, where it names none), mixes
configurations or code, has no manifest, has trials not graded, has infrastructure errors over the
suite's budget (or the run's own, where stricter: ``gate_budget``), or has unjudged trials (a hard
check did not run, of a kind the suite does not allow to stay unjudged). On a run that can stand
for it, a failed gate is 1 even when another gate is undefined (pass^k with n < k, an unknown
cost, a suite-wide figure some scenario does not define); an undefined gate alone is 3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simlab.errors import EXIT_GATE_FAILED, EXIT_INFRA, EXIT_OK
from simlab.report.compare_runs import base_only_phrase, compare, same_run, uncompared
from simlab.report.completeness import state_phrases, unaccepted_part
from simlab.report.trouble import common_causes
from simlab.results.figures import DatasetScore, Rate, RunSummary, ScenarioFigures, SuiteFigures
from simlab.results.power import gate_fail_chance, power_k, rate_at, trials_needed
from simlab.results.summary import extend_curves
from simlab.runner.store import RunStore
from simlab.runner.suite_plan import (
    changed_files,
    partial_text,
    plan_shortfall,
    recorded_suite,
    regraded_files,
    run_plan,
    suite_state,
)
from simlab.specs import Suite
from simlab.specs.base import COMPARISONS
from simlab.specs.gates import DATASET_METRICS, Gate, known_metric, parse_gate


@dataclass
class GateResult:
    label: str
    status: str  # pass | fail | inconclusive
    value: float | None
    reason: str
    scenario: str | None = None


@dataclass(frozen=True)
class GateLine:
    """One line of a gate report, as plain text: each output format (terminal, markdown) escapes
    it its own way. ``status`` is pass / fail / inconclusive, or "note" for a gate's noise;
    ``label`` is the gate's ("" for why the whole run is inconclusive)."""

    status: str
    label: str
    why: str

    @property
    def text(self) -> str:
        return f"{self.label} — {self.why}" if self.label else self.why


VERDICT = {EXIT_OK: "all gates held", EXIT_GATE_FAILED: "a gate failed", EXIT_INFRA: "inconclusive"}


@dataclass
class GateReport:
    results: list[GateResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why the run is inconclusive
    power: dict[str, str] = field(default_factory=dict)  # gate label → how noisy it is (gate_power)
    partial: str | None = None  # "partial: 1 of 10 scenarios", a part of the suite accepted (--partial-ok)

    @property
    def verdict(self) -> str:
        """The result in words ("a gate failed"); the exit code says the same to a machine."""
        return VERDICT[self.exit_code]

    def lines(self) -> list[GateLine]:
        """The report as the terminal and the step summary show it: one line per gate (per failing
        scenario for ``scope: each``, and one line for a ``scope: each`` gate whose scenarios all
        passed: per-scenario passes would drown the failures), then why the run is inconclusive,
        then how noisy each gate is."""
        lines = (
            [
                GateLine(
                    "note", "", f"{self.partial} (accepted with --partial-ok: the gates judge only that part)"
                )
            ]
            if self.partial
            else []
        )
        lines += [
            GateLine(r.status, r.label, r.reason)
            for r in self.results
            if not (r.scenario and r.status == "pass")
        ]
        each: dict[str, list[str]] = {}
        for result in self.results:
            if result.scenario:
                each.setdefault(result.label, []).append(result.status)
        lines += [
            GateLine("pass", label, f"all {len(statuses)} scenarios")
            for label, statuses in each.items()
            if all(status == "pass" for status in statuses)
        ]
        lines += [GateLine("inconclusive", "", problem) for problem in self.problems]
        lines += [GateLine("note", label, text) for label, text in self.power.items()]
        return lines

    @property
    def exit_code(self) -> int:
        """``decide``: the one rule of every gate's exit code."""
        return decide(self.problems, [r.status for r in self.results])


def decide(problems: list[str], statuses: list[str]) -> int:
    """The exit code of a gate (or of a regression check) on a run: 3 when the run cannot stand for
    what is gated (``problems``: incomplete, partial, mixed, unjudgeable), whatever the figures;
    else 1 when a gate failed, 3 when one could not be decided, 0 when all held."""
    if problems:
        return EXIT_INFRA
    if "fail" in statuses:
        return EXIT_GATE_FAILED
    return EXIT_INFRA if "inconclusive" in statuses else EXIT_OK


SUITE_MAX_ERROR_RATE = 0.05  # a suite's default error budget; a plain run's is RUN_MAX_ERROR_RATE
RUN_MAX_ERROR_RATE = 0.10


def error_budget_problem(summary: RunSummary, budget: float) -> str | None:
    """Why the run is inconclusive because of its infrastructure errors (their most common causes
    named), or None when they are within ``budget``."""
    errors = summary.suite.error_rate
    if not errors.n or errors.rate is None or errors.rate <= budget:
        return None
    causes = common_causes(summary)
    return (
        f"infrastructure errors in {errors.c} of {errors.n} trials ({errors.rate:.1%} > budget "
        f"{budget:.1%})" + (f"; most common causes: {causes}" if causes else "")
    )


def ungraded_problem(summary: RunSummary) -> str | None:
    """Why the run cannot be gated because some of its trials carry no verdict at all (stored
    before they were graded: an imported run, a hand-made file), or None. Their figures are no one's:
    a gate on the graded rest would judge a part of the run. The advice is the run's origin's
    (``redo.grade_advice``)."""
    from simlab.report.redo import grade_advice

    if not summary.ungraded:
        return None
    total = summary.trials + summary.ungraded
    how = grade_advice(summary.run_id or "RUN", summary.pins)
    return f"{summary.ungraded} of {total} trials are not graded: grade them first ({how})"


def unjudged_problem(summary: RunSummary) -> str | None:
    """Why the run cannot be gated because some trials are unjudged, or None."""
    left = summary.suite.unjudged_rate
    if not left.c:
        return None
    checks = summary.unjudged.checks
    kinds = sorted({c.kind for c in checks})
    named = ", ".join(f"{c.name} ×{c.trials}" for c in checks[:3]) + (" …" if len(checks) > 3 else "")
    return (
        f"{left.c} of {left.n} trials are unjudged: hard checks did not run ({named}); give the checks "
        f"what they need (a judge model for rubric items) or let the suite accept them: "
        f"allow_unjudged: [{', '.join(kinds)}]"
    )


def run_budget(summary: RunSummary) -> float:
    """The error budget a run is held to on its own (its report, ``simlab run``'s end, either side
    of a comparison, a ``no_regression_vs`` gate's baseline): ``max_error_rate`` as its run.json
    keeps it (``RunSummary.max_error_rate``), else ``RUN_MAX_ERROR_RATE``. A suite's gates hold the
    gated run to the suite's budget instead."""
    return RUN_MAX_ERROR_RATE if summary.max_error_rate is None else summary.max_error_rate


def gate_budget(summary: RunSummary, suite: Suite) -> float:
    """The error budget a suite's gates hold a run to: the suite's (``max_error_rate``, default
    ``SUITE_MAX_ERROR_RATE``), or the run's own (``run_budget``) where that is stricter, so no gate
    decides a run its own report calls no result (a project budget of 1 % the run was played under)."""
    own = SUITE_MAX_ERROR_RATE if suite.max_error_rate is None else suite.max_error_rate
    return min(own, run_budget(summary))


def over_budget(summary: RunSummary, manifest: Mapping[str, Any] | None = None) -> str | None:
    """The line ``simlab run`` and ``simlab report`` both end a run with when its infrastructure
    errors are over its own budget (``run_budget``): a run that mostly could not be played is no
    result. None when within. The way out is the run's origin's (``report/redo.py``): a played run
    is played again with its --run-id, an imported one imported or graded again, a merged one
    merged again from its shards."""
    from simlab.report.redo import redo_advice

    problem = error_budget_problem(summary, run_budget(summary))
    if problem is None:
        return None
    redo = redo_advice(manifest, errors=True)
    if redo is not None:
        return f"incomplete: {problem}; {redo}"
    return (
        f"incomplete: {problem}. Fix the cause and re-run the same command with --run-id "
        f"{summary.run_id}: trials that ended in an error are played again"
    )


def run_problems(summary: RunSummary) -> list[str]:
    """Why a run cannot stand for its own plan, whatever its figures, as its report says it: not
    whole (``completeness_problems``), a part of its suite not accepted with --partial-ok,
    infrastructure errors over its own budget (``run_budget``), or unjudged trials it does not
    allow. A regression check holds both its runs to this (``compare --fail-on-regression``, a
    ``no_regression_vs`` gate's baseline)."""
    problems = completeness_problems(summary)
    for problem in (
        unaccepted_part(summary.completeness),
        ungraded_problem(summary),
        error_budget_problem(summary, run_budget(summary)),
        unjudged_problem(summary),
    ):
        if problem:
            problems.append(problem)
    return problems


def metric_value(figures: SuiteFigures | ScenarioFigures, metric: str, view: str) -> float | None:
    """A gate metric from the suite's or one scenario's figures."""
    if metric.startswith(("pass^", "pass@")):
        entry = figures.view(view).pass_k.get(int(metric[5:])) if metric[5:].isdigit() else None
        return None if entry is None else entry.pass_hat_k if metric[4] == "^" else entry.pass_at_k
    if metric == "success":
        return figures.view(view).success.rate
    if metric == "policy_violations":  # trials with at least one hard policy violation
        return float(
            figures.policy_violations
            if isinstance(figures, ScenarioFigures)
            else figures.policy_violation_rate.c
        )
    if metric == "policy_violation_rate":  # the share of trials with one (e.g. of graded production traces)
        if isinstance(figures, SuiteFigures):
            return figures.policy_violation_rate.rate
        return figures.policy_violations / figures.n if figures.n else None
    if metric == "cost_per_success":
        return figures.cost_per_success_usd
    if metric in ("invalid_rate", "error_rate", "loop_rate"):
        if isinstance(figures, SuiteFigures):
            return {
                "invalid_rate": figures.invalid_rate,
                "error_rate": figures.error_rate,
                "loop_rate": figures.loop_rate,
            }[metric].rate
        count = (
            figures.invalid
            if metric == "invalid_rate"
            else figures.errors
            if metric == "error_rate"
            else None
        )
        return (
            None if count is None or not figures.n else count / figures.n
        )  # a scenario keeps counts, not rates
    raise ValueError(f"metric {metric!r} is not available here")


def _threshold(
    gate: Gate,
    figures: SuiteFigures | ScenarioFigures,
    scenario: str | None,
    attacks: dict[str, Rate],
    dataset: dict[str, DatasetScore] | None = None,
) -> GateResult:
    assert gate.gate is not None
    metric, op, bound = parse_gate(gate.gate, custom=True)
    if dataset is not None and (metric in DATASET_METRICS or not known_metric(metric)):
        return _dataset_gate(gate, metric, op, bound, dataset)
    if metric == "attack_success":
        c = sum(r.c for r in attacks.values())
        n = sum(r.n for r in attacks.values())
        value = c / n if n else None
    else:
        value = metric_value(figures, metric, gate.view)
    where = f"{scenario}: " if scenario else ""
    if value is None:
        why = (
            f"n < k: too few trials ({judged(figures)})"
            if metric.startswith(("pass", "success"))
            else f"{metric} is unknown"
        )
        return GateResult(gate.label, "inconclusive", None, f"{where}{why}", scenario)
    if counts_nothing(metric, figures):
        why = f"{metric} = {value:.4g} counts no valid trial: {judged(figures)}"
        return GateResult(gate.label, "inconclusive", None, f"{where}{why}", scenario)
    held = COMPARISONS[op](value, bound)
    reason = f"{where}{metric} = {value:.4g} {'satisfies' if held else 'violates'} {op} {bound:g}"
    return GateResult(gate.label, "pass" if held else "fail", value, reason, scenario)


# figures of what the agent did: in a run with no valid trial (every one invalid, an error or
# unjudged) they count nothing the verdicts stand by (0 policy violations because no trial was
# judged, or violations a drift may have caused), so a gate on them is inconclusive there
# (cost_per_success needs a pass: with no valid trial it is unknown already)
OF_JUDGED = frozenset({"policy_violations", "policy_violation_rate", "loop_rate"})


def counts_nothing(metric: str, figures: SuiteFigures | ScenarioFigures) -> bool:
    """Whether ``metric`` counts what the agent did over no valid trial: a gate on it decides
    nothing (``simlab gate`` and the pytest plugin alike)."""
    return metric in OF_JUDGED and not figures.valid.success.n


def judged(figures: SuiteFigures | ScenarioFigures) -> str:
    """How many of the trials the figures count are valid (pass or fail), and what the rest were:
    why a figure of valid trials is undefined or counts nothing."""
    if isinstance(figures, ScenarioFigures):
        n, invalid, errors, unjudged = figures.n, figures.invalid, figures.errors, figures.unjudged
    else:
        n = figures.error_rate.n
        invalid, errors, unjudged = figures.invalid_rate.c, figures.error_rate.c, figures.unjudged_rate.c
    return (
        f"{figures.valid.success.n} valid of {n} trials ({invalid} invalid, {errors} errors, "
        f"{unjudged} unjudged)"
    )


def evaluate(
    summary: RunSummary,
    suite: Suite,
    *,
    load_baseline: Callable[[str], RunSummary],
    suite_plan: Mapping[str, int] | None = None,
    partial_ok: bool = False,
) -> GateReport:
    """The gates of ``suite`` on a run's summary (``report/build.py``), whose ``completeness``
    counts planned unit ids: a run without a plan, with trials outside it, or mixing
    configurations proves nothing about the configuration it names, so it is inconclusive; so is a
    run whose plan is not ``suite_plan`` (the suite's scenarios and trials: ``runner/suite_plan``),
    unless the run accepted that part by name (``partial_ok``), which the report then says. Without
    ``suite_plan`` the plan is not checked: ``gate_run``, the entry point of every gate on a run
    folder, always gives one (or says the run cannot be held to it)."""
    report = GateReport()
    report.problems.extend(completeness_problems(summary))
    if suite_plan is not None:
        report.problems.extend(_plan_problems(summary, suite, suite_plan, partial_ok, report))
    problem = error_budget_problem(summary, gate_budget(summary, suite))
    if problem:
        report.problems.append(problem)
    for problem in (ungraded_problem(summary), unjudged_problem(summary)):
        if problem:
            report.problems.append(problem)
    attacks = summary.attacks
    for gate in suite.gates:  # a pass^k beyond the stored curves is computed from the counts
        metric = parse_gate(gate.gate, custom=True)[0] if gate.gate else ""
        if metric.startswith(("pass^", "pass@")) and metric[5:].isdigit():
            extend_curves(summary, int(metric[5:]))
    for gate in suite.gates:
        if gate.no_regression_vs:
            report.results.append(_no_regression(gate, summary, load_baseline, partial_ok))
        elif gate.scope == "each":
            for sid, figures in summary.scenarios.items():
                report.results.append(_threshold(gate, figures, sid, {}))
        else:
            left_out = _left_out(gate, summary)
            report.results.append(left_out or _threshold(gate, summary.suite, None, attacks, summary.dataset))
        power = gate_power(gate, summary) if gate.gate else None
        if power:
            report.power[gate.label] = power
    return report


def _left_out(gate: Gate, summary: RunSummary) -> GateResult | None:
    """A suite-wide success, pass^k or pass@k is the mean over the scenarios that define it (those
    with k valid trials or more): a gate on it while a scenario of the run has fewer (its trials
    invalid, errored, unjudged) would judge the suite without that scenario, so it is inconclusive,
    naming them; None when every scenario defines the figure. A scenario that played fewer than k
    trials in all (its own ``trials``, by design; a run short of its plan is incomplete) is left
    out of the figure as its plan says, not a reason to withhold the verdict."""
    assert gate.gate is not None
    metric = parse_gate(gate.gate, custom=True)[0]
    if metric == "success":
        k = 1
    elif metric.startswith(("pass^", "pass@")) and metric[5:].isdigit():
        k = int(metric[5:])
    else:
        return None
    short = [
        f"{sid} {figures.view(gate.view).success.n}"
        for sid, figures in summary.scenarios.items()
        if figures.view(gate.view).success.n < k <= figures.n  # fewer trials played: its plan
    ]
    if not short or len(short) == len(summary.scenarios):
        return None  # every scenario defines it, or none does (the figure is then undefined: n < k)
    more = f" and {len(short) - 4} more" if len(short) > 4 else ""
    return GateResult(
        gate.label,
        "inconclusive",
        None,
        f"{metric} is undefined in {len(short)} of {len(summary.scenarios)} scenarios (fewer than "
        f"{k} {gate.view} trials: {', '.join(short[:4])}{more}); the suite's figure would leave them out",
    )


def _dataset_gate(
    gate: Gate, metric: str, op: str, bound: float, dataset: dict[str, DatasetScore]
) -> GateResult:
    """A gate on a dataset-level figure (``results/dataset.py``): inconclusive when no function
    returned the key, a function failed, or part of the counts is unknown."""
    entry = dataset.get(metric)
    if entry is None:
        failed = [f"{e.source}: {e.error}" for e in dataset.values() if e.error]
        why = (
            f"no summary function returned {metric!r}"
            if not known_metric(metric)
            else f"{metric} is undefined: no trial had a trajectory check"
        )
        return GateResult(
            gate.label, "inconclusive", None, why + (f" ({'; '.join(failed[:2])})" if failed else "")
        )
    if entry.error:
        return GateResult(gate.label, "inconclusive", None, f"{entry.source}: {entry.error}")
    if entry.unknown_trials or entry.score is None:
        why = "undefined" if entry.score is None else f"unknown for {entry.unknown_trials} trials"
        return GateResult(gate.label, "inconclusive", entry.score, f"{metric} is {why} ({entry.detail})")
    held = COMPARISONS[op](entry.score, bound)
    reason = f"{metric} = {entry.score:.4g} {'satisfies' if held else 'violates'} {op} {bound:g}" + (
        f" ({entry.detail})" if entry.detail else ""
    )
    return GateResult(gate.label, "pass" if held else "fail", entry.score, reason)


POWER_ALPHA = 0.05  # the chance of failing by noise a gate is sized for


def gate_power(gate: Gate, summary: RunSummary) -> str | None:
    """One line on how noisy a lower-bound gate on success, pass^k or pass@k is with this run's
    valid trials: the chance that an agent exactly at the threshold fails it, and the trials per
    scenario at which one ``gate.power_margin`` above it fails at most 5 % of the time. Assumes
    the same true rate in every scenario and independent trials (``results/power.py``)."""
    return power_line(gate, [figures.view(gate.view).success.n for figures in summary.scenarios.values()])


def power_line(gate: Gate, trials: list[int]) -> str | None:
    """``gate_power`` for planned valid trials per scenario (``simlab run --list`` sizes a suite
    before anything is played)."""
    if gate.gate is None:
        return None
    metric, op, bound = parse_gate(gate.gate, custom=True)
    k, p = power_k(metric), rate_at(metric, bound)
    if k is None or p is None or not trials or not any(trials):
        return None
    chance = gate_fail_chance(metric, op, bound, trials, p, gate.scope)
    if chance is None:
        return None
    shown = (
        f"n={trials[0]} per scenario"
        if len(set(trials)) == 1
        else f"n={min(trials)}–{max(trials)} per scenario"
    )
    text = (
        f"noise: an agent exactly at {metric} = {bound:g} fails this gate {chance:.1%} of the time "
        f"({len(trials)} scenarios, {shown})"
    )
    target = bound + gate.power_margin
    if target > 1:
        return text
    if gate.scope == "suite" and k > 1 and len(trials) > 1:
        return text + "; the trials needed for a margin are computed per scenario only (scope: each)"
    needed = trials_needed(metric, op, bound, len(trials), target, alpha=POWER_ALPHA, scope=gate.scope)
    verdict = (
        f"run {needed} trials per scenario" if needed else "more than 1000 trials per scenario are needed"
    )
    return text + f"; to fail at most {POWER_ALPHA:.0%} of the time at {metric} = {target:g}, {verdict}"


def gate_run(
    folder: Path,
    summary: RunSummary,
    suite: Suite,
    *,
    suite_path: str | Path | None,
    load_baseline: Callable[[str], RunSummary],
    root: Path = Path("."),
) -> GateReport:
    """``evaluate`` on the run in ``folder`` against the suite's plan: read from ``suite_path``, or
    as the run recorded it when it was played from this suite (``simlab run --suite``). A part of
    the suite passes only when the run was played from this suite with ``--partial-ok``. Every
    entry point of a gate (``simlab gate``, ``run --suite``, ``simlab.Run.gate``) comes here."""
    manifest = RunStore(folder).read_manifest()
    recorded = recorded_suite(manifest)
    own = recorded is not None and recorded[0] == suite.id
    plan = recorded[1] if own and recorded else None
    changed: list[str] = []
    regraded: list[str] = []
    if suite_path is not None and suite.scenarios:
        plan, files = suite_state(suite_path, root)
        changed, regraded = changed_files(manifest, files), regraded_files(manifest, files)
    partial_ok = own and bool((manifest or {}).get("partial_ok"))
    unknown = plan is None and bool(suite.scenarios)
    report = evaluate(summary, suite, load_baseline=load_baseline, suite_plan=plan, partial_ok=partial_ok)
    if unknown:
        report.problems.append(
            f"the plan of suite {suite.id!r} is unknown here, so this run cannot be held to it"
        )
    for problem in (_graders_problem(manifest, suite), *_players_problems(manifest, suite, root)):
        if problem:
            report.problems.append(problem)
    if changed:
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        report.problems.append(
            f"{len(changed)} of the suite's scenarios changed since the run: "
            f"{', '.join(changed[:4])}{more} are not the version the run played (its run.json pins each "
            "file's sha256); play the suite again"
        )
    if regraded:
        more = f" and {len(regraded) - 4} more" if len(regraded) > 4 else ""
        report.problems.append(
            f"{len(regraded)} of the suite's scenarios were graded with another version of their files "
            f"than the suite's: {', '.join(regraded[:4])}{more} (simlab grade, run.json's graded_sha256); "
            "grade the run again with the suite's files"
        )
    return report


def _players_problems(manifest: Mapping[str, Any] | None, suite: Suite, root: Path) -> list[str]:
    """Why the run's simulated user, judge or limits are not the ones the suite plays with: its own
    ``simulator:`` or ``judge:``, else (a suite of scenarios, played) the project's in
    ``simlab.yaml`` under ``root``, as ``simlab run --suite`` picks them; against the run's pins. A
    run played with ``--simulator`` or ``--judge`` over them is another test, whose verdicts cannot
    stand for the suite's (``--allow-same-family`` alone changes no player). A suite of no
    scenarios (gates on graded production traces) plays nothing: only what it names is held."""
    from simlab.redact import mask_tree, safe_settings
    from simlab.specs import SimulatorSpec, load_config
    from simlab.specs.scenario import Limits

    if manifest is None:
        return []  # no run.json: its players are unknown, and completeness_problems says so
    pins = manifest.get("pins") or {}
    problems = []
    simulator, judge_spec, limits = suite.simulator, suite.judge, suite.limits
    if suite.scenarios:
        config = load_config(root / "simlab.yaml")
        simulator = simulator or config.simulator or SimulatorSpec()
        judge_spec = judge_spec or config.judge
        limits = limits or config.limits or Limits()
    if simulator is not None:
        wanted = mask_tree(safe_settings(simulator.model_dump(mode="json", exclude_none=True)))
        pinned = pins.get("simulator")
        if _without_same_family(pinned) != _without_same_family(wanted):
            problems.append(_player_problem("simulator", suite.id, wanted, pinned))
    if limits is not None and "limits" in pins and pins["limits"] != limits.model_dump(mode="json"):
        problems.append(
            f"the run was played under other limits than suite {suite.id!r} sets (a trial past a limit is "
            "a fail): play the suite (simlab run --suite) so its verdicts are the suite's"
        )
    if suite.scenarios or judge_spec is not None:
        judge = judge_spec.pin() if judge_spec is not None else None
        wanted_judge = mask_tree(safe_settings(judge) if isinstance(judge, dict) else judge)
        if pins.get("judge") != wanted_judge:
            problems.append(_player_problem("judge", suite.id, wanted_judge, pins.get("judge")))
    return problems


def _without_same_family(pin: Any) -> Any:
    return {k: v for k, v in pin.items() if k != "allow_same_family"} if isinstance(pin, Mapping) else pin


def _player_problem(role: str, suite_id: str, wanted: Any, pinned: Any) -> str:
    def named(pin: Any) -> str:
        if isinstance(pin, Mapping):
            return str(pin.get("model") or pin.get("kind") or "?")
        return "none" if pin is None else str(pin)

    return (
        f"the run's {role} is not the one suite {suite_id!r} names (the suite: {named(wanted)}; the run: "
        f"{named(pinned)}): play the suite without --{role} so its verdicts are the suite's"
    )


def _graders_problem(manifest: Mapping[str, Any] | None, suite: Suite) -> str | None:
    """Why the run's checks are not the ones the suite grades with (its ``graders``, added to every
    scenario's: pinned as the run's ``pins.graders``), or None: a run graded without a grader the
    suite adds never ran that grader's checks, so its verdicts cannot stand for the suite's."""
    from simlab.redact import mask_tree

    pinned = ((manifest or {}).get("pins") or {}).get("graders") or []
    wanted = mask_tree([use.model_dump(mode="json") for use in suite.graders])
    if pinned == wanted:
        return None

    def named(uses: Any) -> str:
        items = uses if isinstance(uses, list) else []
        return ", ".join(str(u.get("use")) if isinstance(u, Mapping) else "?" for u in items) or "none"

    return (
        f"the run was graded with other graders than suite {suite.id!r} adds (the suite: {named(wanted)}; "
        f"the run: {named(pinned)}): play the suite (simlab run --suite …) so every trial is graded "
        "as it asks"
    )


def _plan_problems(
    summary: RunSummary, suite: Suite, suite_plan: Mapping[str, int], partial_ok: bool, report: GateReport
) -> list[str]:
    """Why the run is not the suite's plan, or nothing (a part accepted with ``partial_ok`` is set
    on ``report.partial`` instead). A suite that names no scenarios (gates on graded production
    traces: ``simlab grade-traces``) has no plan to hold a run to."""
    if not suite.scenarios:
        return []
    played = run_plan({"pins": summary.pins})
    if played is None:
        return []  # no plan in run.json: completeness_problems says so
    shortfall = plan_shortfall(played, suite_plan)
    if not shortfall:
        return []
    text = partial_text(played, suite_plan)
    acceptable = set(played) <= set(suite_plan)  # no scenario of another suite
    if partial_ok and acceptable:
        report.partial = text
        return []
    advice = (
        "play the whole suite, or accept the part by name (simlab run --suite SUITE … --partial-ok)"
        if acceptable
        else "play the suite's own scenarios (simlab run --suite SUITE): --partial-ok accepts no other"
    )
    return [f"not the run of suite {suite.id!r} ({text}): " + "; ".join(shortfall) + f"; {advice}"]


def completeness_problems(summary: RunSummary) -> list[str]:
    """Why a run cannot stand for its plan (no manifest, missing units, foreign units, mixed pins),
    in the words every report's first line uses (``report/completeness.state_phrases``)."""
    return state_phrases(summary.completeness, summary.mixed_pins)


def _no_regression(
    gate: Gate, summary: RunSummary, load_baseline: Callable[[str], RunSummary], partial_ok: bool = False
) -> GateResult:
    """The gated run against its baseline, as ``compare --fail-on-regression`` decides it (the
    baseline held to ``run_problems``, what was not compared: ``uncompared``); ``partial_ok``: the
    gated run is a part of its suite accepted by name, so the baseline's other scenarios may be
    left out, and the reason says they were."""
    from simlab.errors import SimlabError

    assert gate.no_regression_vs is not None
    try:
        baseline = load_baseline(gate.no_regression_vs)
        result = compare(baseline, summary, margin=gate.margin)
    except SimlabError as exc:
        return GateResult(gate.label, "inconclusive", None, str(exc).splitlines()[0])
    # the gated run's own problems are the report's; the baseline's and what was not compared, here
    problems = (
        same_run(baseline, summary) + run_problems(baseline) + uncompared(result, partial_ok=partial_ok)
    )
    if problems:
        return GateResult(
            gate.label,
            "inconclusive",
            None,
            f"not compared with the baseline run {gate.no_regression_vs}: " + "; ".join(problems[:2]),
        )
    pooled = result.pooled
    if pooled.difference is None or pooled.low is None or pooled.high is None:
        return GateResult(gate.label, "inconclusive", None, "no shared scenarios with valid trials")
    interval = f"{pooled.difference:+.1%} [{pooled.low:+.1%}, {pooled.high:+.1%}]"
    regressed = pooled.verdict == "regressed"
    reason = (
        f"success changed by {interval} vs {gate.no_regression_vs}: "
        + ("the drop is beyond noise" if regressed else "no regression beyond noise")
        + (f" (margin {gate.margin:g})" if gate.margin else "")
        + (
            f"; {base_only_phrase(result.only_in_base, len(result.scenarios))}, accepted with --partial-ok"
            if result.only_in_base
            else ""
        )
    )
    return GateResult(gate.label, "fail" if regressed else "pass", pooled.difference, reason)
