"""Gates of a suite: the conditions under which a nightly run fails the build.

Written as strings (``"pass^3 >= 0.8"``, ``"policy_violations == 0"``) or mappings
(``{gate: "pass^1 >= 0.9", scope: each}``, ``{no_regression_vs: RUN_ID, margin: 0.05}``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, model_validator

from simlab.specs.base import SpecModel

DATASET_METRICS = ("tool_precision", "tool_recall", "tool_f1")  # pooled over the run (results/dataset.py)
METRICS = (
    "success",
    "policy_violations",
    "policy_violation_rate",
    "cost_per_success",
    "invalid_rate",
    "error_rate",
    "loop_rate",
    "attack_success",
    *DATASET_METRICS,
)
_K_METRIC = re.compile(r"^pass(\^|@)([1-9]\d*)$")  # k trials: 1 or more
_CUSTOM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a key a suite's summary function returns
GATE = re.compile(r"^\s*([A-Za-z_@^0-9]+)\s*(<=|>=|==|!=|<|>)\s*(-?[0-9.]+%?)\s*$")


def parse_gate(text: str, *, custom: bool = False) -> tuple[str, str, float]:
    """(metric, op, value); a value written with % is a fraction (80% → 0.8). With ``custom``, a
    metric simlab does not know is taken as the key of a suite's summary function."""
    match = GATE.match(text)
    if not match:
        raise ValueError(f"write a gate as 'METRIC OP NUMBER', e.g. 'pass^3 >= 0.8'; got {text!r}")
    metric, op, raw = match.groups()
    if re.fullmatch(r"pass[\^@]0+", metric):
        raise ValueError(
            f"{metric}: k counts trials, so it is 1 or more (pass^1 is the success rate); got {text!r}"
        )
    if not known_metric(metric) and not (custom and _CUSTOM.match(metric)):
        raise ValueError(
            f"unknown gate metric {metric!r}; use pass^k, pass@k or one of {', '.join(METRICS)}, "
            "or the key of one of the suite's summary_evaluators"
        )
    value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    return metric, op, value


def known_metric(metric: str) -> bool:
    """Whether simlab itself computes ``metric`` (not a summary function's key)."""
    return metric in METRICS or _K_METRIC.match(metric) is not None


# rates (0 to 1), as are pass^k and pass@k
RATES = (
    "success",
    "policy_violation_rate",
    "invalid_rate",
    "error_rate",
    "loop_rate",
    "attack_success",
    *DATASET_METRICS,
)


def never_holds(metric: str, op: str, value: float) -> str | None:
    """Why ``METRIC OP value`` is false for every possible run (a scale mix-up such as
    ``pass^1 >= 80``), or None. A rate lies in [0, 1]; counts and costs are never negative."""
    rate = metric in RATES or _K_METRIC.match(metric) is not None
    high = 1.0 if rate else float("inf")
    if (op in (">=", "==") and value > high) or (op == ">" and value >= high):
        return (
            f"{metric} is a rate from 0 to 1 (0.8 means 80%); did you mean {value / 100:g} or {value:g}%?"
            if value > 1 and value <= 100
            else f"{metric} is a rate from 0 to 1"
        )
    if (op in ("<=", "==") and value < 0) or (op == "<" and value <= 0):
        return f"{metric} is never below 0"
    return None


class Gate(SpecModel):
    """One gate. ``scope: each`` makes a threshold hold for every scenario, not just the mean."""

    gate: str | None = Field(None, description="'METRIC OP NUMBER', e.g. 'pass^3 >= 0.8'.")
    scope: Literal["suite", "each"] = "suite"
    view: Literal["valid", "raw"] = Field(
        "valid",
        description="valid: invalid simulations and infrastructure errors left out; raw: every trial.",
    )
    no_regression_vs: str | None = Field(
        None, description="Baseline run id (or folder) to compare success with."
    )
    margin: float = Field(0.0, ge=0, le=1, description="Tolerated drop in points (0.05 = 5 points).")
    power_margin: float = Field(
        0.05,
        gt=0,
        le=1,
        description="For a lower bound on success, pass^k or pass@k: the report says how many "
        "trials per scenario an agent this far above the threshold needs to fail the "
        "gate by chance at most 5% of the time.",
    )
    name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"gate": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_kind(self) -> Gate:
        if (self.gate is None) == (self.no_regression_vs is None):
            raise ValueError("a gate is either 'METRIC OP NUMBER' or {no_regression_vs: RUN_ID}")
        if (
            self.gate is not None
        ):  # a metric simlab does not know is checked by the suite (summary_evaluators)
            metric, op, value = parse_gate(self.gate, custom=True)
            never = never_holds(metric, op, value)
            if never:
                raise ValueError(f"gate {self.gate!r} can never hold: {never}")
            if self.scope == "each" and (metric in DATASET_METRICS or not known_metric(metric)):
                raise ValueError(
                    f"{metric} is a figure of the whole run (a dataset-level evaluator), with no value "
                    "per scenario: drop 'scope: each'"
                )
        return self

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.gate:
            return self.gate + (" (each scenario)" if self.scope == "each" else "")
        return f"no regression vs {self.no_regression_vs}" + (
            f" (margin {self.margin:g})" if self.margin else ""
        )
