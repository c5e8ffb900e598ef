"""The typed figures of a run: ``RunSummary`` is ``summary.json`` as a model; ``Comparison`` is
``simlab compare --json``.

One model for one fact: the terminal report, the markdown, JSON and CSV reports, the gates, the
run comparison, JUnit, the viewer and the public API (``simlab.load_run(...).summary``) read these
fields, not string keys. ``RunSummary.model_dump(mode="json")`` is exactly what ``summary.json``
holds (pass^k curves keyed by k as strings there, by int here). Unknown figures are None, never 0.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from simlab.transcript.causes import ModeCause

SUMMARY_SCHEMA_VERSION = 1


class _Figures(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> str:
        """The JSON simlab writes (``summary.json``, ``report --json``, ``compare --json``): the
        dump, two-space indented, keys in field order, non-ASCII escaped, as always written."""
        return json.dumps(self.model_dump(mode="json"), indent=2)


class Rate(_Figures):
    """``c`` of ``n`` with its Wilson 95 % interval; ``rate`` and the bounds are None when n = 0."""

    c: int
    n: int
    rate: float | None = None
    low: float | None = None
    high: float | None = None


class PassPoint(_Figures):
    """pass^k and pass@k at one k: None when fewer than k trials (undefined, not 0)."""

    pass_hat_k: float | None = None
    pass_at_k: float | None = None


class SuitePassPoint(PassPoint):
    """A suite point: the mean over the scenarios that define this k, and how many do."""

    scenarios: int = 0


class ViewFigures(_Figures):
    """The figures of one view: ``raw`` (every graded trial) or ``valid`` (pass and fail only)."""

    success: Rate
    pass_k: dict[int, PassPoint] = Field(
        default_factory=dict, description="The curve, k = 1 … (at most 100)."
    )

    @property
    def pass_hat_k(self) -> dict[int, float | None]:
        """k → pass^k (the chance that k trials in a row all pass)."""
        return {k: point.pass_hat_k for k, point in self.pass_k.items()}

    @property
    def pass_at_k(self) -> dict[int, float | None]:
        """k → pass@k (the chance that at least one of k trials passes)."""
        return {k: point.pass_at_k for k, point in self.pass_k.items()}


class SuiteView(ViewFigures):
    pass_k: dict[int, SuitePassPoint] = Field(
        default_factory=dict,  # type: ignore[assignment]
        description="The mean curve over scenarios, k = 1 … (at most 100).",
    )


class Percentiles(_Figures):
    p50: float | None = None
    p95: float | None = None
    known: int = 0
    unknown: int = 0


class SuiteFigures(_Figures):
    """Suite figures: rates over all trials; pass^k is the mean over scenarios."""

    raw: SuiteView
    valid: SuiteView
    invalid_rate: Rate
    error_rate: Rate
    unjudged_rate: Rate
    loop_rate: Rate
    policy_violation_rate: Rate
    cost_usd: float | None = None
    cost_per_success_usd: float | None = None
    judge_calls: int = 0
    judge_cost_usd: float | None = None
    tokens: Percentiles = Field(default_factory=Percentiles)
    latency_s: Percentiles = Field(default_factory=Percentiles)
    retries: int = 0
    retry_wait_s: float = 0.0
    terminations: dict[str, int] = Field(default_factory=dict)
    flake_classes: dict[str, int] = Field(default_factory=dict)

    @property
    def pass_hat_k(self) -> dict[int, float | None]:
        """k → pass^k over valid trials, as gates read it by default."""
        return self.valid.pass_hat_k

    def view(self, name: str) -> SuiteView:
        """The ``raw`` or the ``valid`` figures, by name (a gate's ``view``, ``--view``)."""
        return {"raw": self.raw, "valid": self.valid}[name]


class ScenarioFigures(_Figures):
    """One scenario's figures: counts by verdict, and the raw and valid views."""

    persona_id: str | None = None
    n: int
    passes: int
    verdicts: dict[str, int] = Field(default_factory=dict)
    raw: ViewFigures
    valid: ViewFigures
    flake_class: str | None = None
    invalid: int = 0
    policy_violations: int = 0
    errors: int = 0
    unjudged: int = 0
    unjudged_counted_as_pass: int = 0
    terminations: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    cost_per_success_usd: float | None = None

    @property
    def pass_hat_k(self) -> dict[int, float | None]:
        """k → pass^k over valid trials, as gates read it by default."""
        return self.valid.pass_hat_k

    def view(self, name: str) -> ViewFigures:
        """The ``raw`` or the ``valid`` figures, by name (a gate's ``view``, ``--view``)."""
        return {"raw": self.raw, "valid": self.valid}[name]


class CheckFailures(_Figures):
    name: str
    kind: str
    failures: int
    in_error_trials: int = Field(
        0,
        description="Of the failures, those in trials that ended in an infrastructure "
        "error: the check failed because the trial could not be played.",
    )


class UnjudgedCheck(_Figures):
    name: str
    kind: str
    trials: int


class Unjudged(_Figures):
    """Trials a hard check of which did not run, and how many of them count as passes."""

    trials: int = 0
    counted_as_pass: int = 0
    allowed_kinds: list[str] = Field(default_factory=list)
    checks: list[UnjudgedCheck] = Field(default_factory=list)


class ErrorCause(_Figures):
    cause: str
    trials: int


class FailureMode(_Figures):
    """Trials that did not pass the same way (``transcript/blame.py``), ranked by the trials they cost."""

    mode: str = Field(
        description="The signature: blame, the deciding check's kind and name, the tool at the step."
    )
    blame: str
    trials: int
    scenarios: list[str] = Field(description="The scenarios it cost trials in, sorted.")
    verdicts: dict[str, int]
    representative: str = Field(description="unit_id of the trial to read first: the mode's first trial.")
    first_fault_turn: int | None = None
    first_fault_event: int | None = None
    without: dict[int, float | None] = Field(
        default_factory=dict,
        description="The suite's pass^k (suite.raw) at a few k had these trials passed: its "
        "weight on the headline.",
    )
    cause: ModeCause | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Its written cause, from the run's triage.json (simlab triage); "
        "absent when the mode was not triaged.",
    )


class CheckError(_Figures):
    name: str
    kind: str
    hard: bool
    count: int
    reason: str


class Completeness(_Figures):
    """What the readers found against the plan in ``run.json`` (counted in planned unit ids);
    ``report/completeness.py`` says it in words."""

    planned: int | None = None
    finished: int = 0
    unplanned: int = 0
    manifest: bool = True
    partial: str | None = Field(
        None,
        description="A run of a part of its suite (simlab run --suite … -k …): "
        "'partial: 1 of 10 scenarios' (runner/suite_plan.partial_text); "
        "None when it is the suite's whole plan or played without one.",
    )
    partial_ok: bool = Field(
        False,
        description="The part was accepted by name (simlab run --partial-ok): the "
        "reports say 'partial' and the gates still decide.",
    )

    @model_serializer(mode="wrap")
    def _without_unset_partial(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``partial`` only when there is one: a whole run's completeness keeps its four keys."""
        data: dict[str, Any] = handler(self)
        if data.get("partial") is None:
            data.pop("partial", None)
            data.pop("partial_ok", None)
        return data


class Divergence(_Figures):
    """A scenario's replayed trials (``run --replay``): how many diverged from the recording, and when."""

    replayed: int = Field(description="Trials whose user turns were replayed.")
    diverged: int = Field(description="Of those, trials whose agent diverged from the recording.")
    mean_turn: float | None = Field(
        None, description="The mean turn of the first divergence; None when none diverged."
    )


class DatasetScore(_Figures):
    """One dataset-level (summary) figure over a whole run: simlab's pooled tool-call precision,
    recall and F1, or what a suite's summary function returned. ``score`` None: undefined or
    unknown (with ``error`` when the function failed), never 0."""

    key: str = Field(
        description="The figure's name, as a gate names it (tool_f1, or the key a function returned)."
    )
    score: float | None = None
    source: str = Field(description="'simlab' for the built-in figures, or the function's module:function.")
    detail: str = Field("", description="What it was computed from, e.g. 'tp=18 fp=2 fn=6 over 24 trials'.")
    error: str | None = Field(
        None,
        description="Why a summary function gave no score (it raised, or returned "
        "something other than {key, score}).",
    )
    trials: int | None = Field(None, description="The trials it was computed over.")
    unknown_trials: int = Field(
        0,
        description="Trials whose counts are unknown (heads written before simlab kept "
        "them): a gate on the figure is inconclusive.",
    )


class RunSummary(_Figures):
    """``summary.json``: a run's figures, per scenario and for the suite."""

    state: str | None = Field(
        None,
        description="First: 'complete', or what every report's first line says of a "
        "run that is not ('incomplete: 924 of 3,000 planned trials', "
        "report/completeness.py); None: not counted (not built from a "
        "run folder).",
    )
    schema_version: int = SUMMARY_SCHEMA_VERSION
    run_id: str | None = None
    trials: int
    scenarios_count: int
    ungraded: int = 0
    suite: SuiteFigures
    scenarios: dict[str, ScenarioFigures] = Field(default_factory=dict)
    violated_rules: list[CheckFailures] = Field(default_factory=list)
    top_failing_checks: list[CheckFailures] = Field(default_factory=list)
    attacks: dict[str, Rate] = Field(default_factory=dict)
    not_run_checks: dict[str, int] = Field(default_factory=dict)
    unjudged: Unjudged = Field(default_factory=Unjudged)
    error_causes: list[ErrorCause] = Field(default_factory=list)
    check_errors: list[CheckError] = Field(default_factory=list)
    invalid_by_simulator: dict[str, Rate] = Field(default_factory=dict)
    pins: dict[str, Any] = Field(default_factory=dict)
    mixed_pins: list[str] = Field(
        default_factory=list,
        description="Pin differences a resume with --force went over: the run's trials mix configurations.",
    )
    completeness: Completeness | None = None
    warnings: list[str] = Field(default_factory=list)
    divergence: dict[str, Divergence] = Field(
        default_factory=dict, description="Per scenario, for a replay run (run --replay): added last."
    )
    adk_criteria: dict[str, dict[str, Rate]] = Field(
        default_factory=dict,
        description="Per scenario imported from ADK, per ADK criterion: the trials whose score "
        "met its threshold, of the trials it ran in (ADK itself runs a case once).",
    )
    dataset: dict[str, DatasetScore] = Field(
        default_factory=dict,
        description="Dataset-level figures by key: tool_precision, tool_recall, tool_f1 "
        "(pooled over trials with a trajectory), and the keys of summary functions.",
    )
    failure_modes: list[FailureMode] = Field(
        default_factory=list,
        description="Why trials failed: the modes of the trials that did not pass, most costly first.",
    )
    failure_modes_more: int = Field(0, description="Modes left out of failure_modes (the top ones are kept).")
    max_error_rate: float | None = Field(
        None,
        description="The run's error budget as its run.json keeps it (None: a plain run's default, "
        "report/gates.RUN_MAX_ERROR_RATE): above it the run is no result in its report and in a "
        "comparison (a suite's gates hold it to the suite's budget).",
    )


# -- two runs compared (``report/compare_runs.py``) ------------------------------------------

ChangeVerdict = Literal["regressed", "improved", "within noise", "no data"]


class Count(_Figures):
    c: int = Field(description="Passes among the valid trials.")
    n: int = Field(description="Valid trials (pass or fail).")


class FlakeChange(_Figures):
    base: str | None = None
    candidate: str | None = None


class ScenarioChange(_Figures):
    """One shared scenario: valid success in each run, and candidate − base with its 95 % interval."""

    scenario: str
    base: Count
    candidate: Count
    difference: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: ChangeVerdict
    flipped: bool = Field(description="Went from always passing to always failing, or back.")
    flake_class: FlakeChange
    detectable: float | None = Field(
        None,
        description="The smallest difference these trial counts can tell from noise (80 % power, 5 % level).",
    )


class PooledChange(_Figures):
    """Every shared scenario's valid trials pooled."""

    base: Count
    candidate: Count
    difference: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: ChangeVerdict
    detectable: float | None = None


class Paired(_Figures):
    """Scenarios that moved, and the two-sided sign test over them (None when none moved)."""

    improved: list[str] = Field(default_factory=list)
    regressed: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    flipped: list[str] = Field(default_factory=list)
    sign_test_p: float | None = None


ModeStatus = Literal["new", "fixed", "grew", "shrank", "same", "unknown"]


class ModeChange(_Figures):
    """One failure mode in two runs (``report/compare_runs.py``): its trials in each, as a share of each
    run's trials; None where the mode is beyond the top modes a summary keeps (unknown, not zero)."""

    mode: str
    blame: str
    base: int | None
    candidate: int | None
    base_share: float | None
    candidate_share: float | None
    status: ModeStatus = Field(
        description="new: only in the candidate; fixed: only in the base; grew/shrank: "
        "its share of the trials; unknown: beyond one side's kept modes."
    )


class Comparison(_Figures):
    """Candidate run against base run (``simlab compare``): per scenario, pooled, paired."""

    pins_differ: list[str] = Field(default_factory=list, description="Why the runs may not be comparable.")
    only_in_base: list[str] = Field(default_factory=list)
    only_in_candidate: list[str] = Field(default_factory=list)
    scenarios: list[ScenarioChange] = Field(default_factory=list)
    pooled: PooledChange
    paired: Paired
    warnings: list[str] = Field(default_factory=list)
    modes: list[ModeChange] = Field(
        default_factory=list,
        description="Failure modes new in the candidate, fixed, grown or shrunk (then the same ones).",
    )
