"""The typed figures of a run: ``RunSummary`` is ``summary.json`` as a model.

One model for one fact: the terminal report, the markdown, JSON and CSV reports, the gates, the
run comparison, JUnit and the public API (``simlab.load_run(...).summary``) read these fields, not
string keys. ``RunSummary.model_dump(mode="json")`` is exactly what ``summary.json`` holds
(pass^k curves keyed by k as strings there, by int here). Unknown figures are None, never 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUMMARY_SCHEMA_VERSION = 1


class _Figures(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    pass_k: dict[int, PassPoint] = Field(default_factory=dict, description="The curve, k = 1 … (at most 100).")

    @property
    def pass_hat_k(self) -> dict[int, float | None]:
        """k → pass^k (the chance that k trials in a row all pass)."""
        return {k: point.pass_hat_k for k, point in self.pass_k.items()}

    @property
    def pass_at_k(self) -> dict[int, float | None]:
        """k → pass@k (the chance that at least one of k trials passes)."""
        return {k: point.pass_at_k for k, point in self.pass_k.items()}


class SuiteView(ViewFigures):
    pass_k: dict[int, SuitePassPoint] = Field(default_factory=dict,  # type: ignore[assignment]
                                              description="The mean curve over scenarios, k = 1 … (at most 100).")


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


class ScenarioFigures(_Figures):
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
        return self.valid.pass_hat_k


class CheckFailures(_Figures):
    name: str
    kind: str
    failures: int


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


class CheckError(_Figures):
    name: str
    kind: str
    hard: bool
    count: int
    reason: str


class Completeness(_Figures):
    """What the readers found against the plan in ``run.json`` (counted in planned unit ids)."""

    planned: int | None = None
    finished: int = 0
    unplanned: int = 0
    manifest: bool = True


class RunSummary(_Figures):
    """``summary.json``: a run's figures, per scenario and for the suite."""

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
    mixed_pins: list[str] = Field(default_factory=list, description="Pin differences a resume with --force went "
                                                                    "over: the run's trials mix configurations.")
    completeness: Completeness | None = None
    warnings: list[str] = Field(default_factory=list)
