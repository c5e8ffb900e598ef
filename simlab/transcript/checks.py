"""Checks: one grader verdict on one transcript, and the trial verdict they combine into."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from simlab.specs.base import CheckKind  # defined with the specs, which name kinds too
from simlab.transcript.verdicts import VERDICTS  # what each verdict means: verdicts.py

CheckStatus = Literal["pass", "fail", "not_run", "error"]

Verdict = Literal["pass", "fail", "invalid", "error", "unjudged"]
__all__ = ["VERDICTS", "Check", "CheckKind", "CheckStatus", "Verdict"]


class Check(BaseModel):
    """One grader verdict on a transcript, explaining itself."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="Which rule or criterion, e.g. 'before(check_refund_policy, issue_refund)'."
    )
    kind: CheckKind
    status: CheckStatus
    hard: bool = Field(True, description="Hard checks gate the verdict; soft ones only score.")
    score: float | None = Field(
        None, description="0..1 where the check has a degree (partial credit, recall)."
    )
    reason: str = Field("", description="One line: why it passed or failed.")
    event: int | None = Field(None, description="Index into transcript.events of the event it points at.")
    turn: int | None = None
    call_id: str | None = None
    category: str | None = Field(None, description="Attack category for injection rules.")
    details: dict[str, Any] = Field(
        default_factory=dict, description="Structured extras (diffs, counts, metrics)."
    )
    grader: str | None = Field(
        None,
        description="The registered name of the grader that produced it ('state', 'rubric', a user grader's "
        "name); None in records written before graders were registered.",
    )
    grader_params: dict[str, Any] = Field(
        default_factory=dict,
        description="The parameters that grader was given (a scenario's or suite's params); "
        "empty when it ran with its defaults.",
    )

    @property
    def passed(self) -> bool | None:
        return None if self.status in ("not_run", "error") else self.status == "pass"
