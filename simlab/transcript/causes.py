"""The written cause of a failure mode: a fault type from one taxonomy and one sentence, asked of a
judge model once per mode by ``simlab triage`` (``graders/triage.py``), kept in the run's
``triage.json`` (``Triage``) and shown beside the mode on every report (``report/why.py``).

The taxonomy is defined here, once: the judge's prompt, the answer's schema, calibration labels and
the docs (docs/concepts/failures.md, held to this table by a test) all read ``FAULT_TYPES``. It is
in the spirit of τ-bench's ``auto_error_identification`` (fault author and fault type); the author
is simlab's own deterministic blame (``transcript/blame.py``), so only the type is asked.

A judge that gives no usable answer (not the JSON asked for, an unknown fault type, a model error)
leaves its mode **undecided**: ``fault_type`` and ``cause`` are None and ``undecided`` says why;
nothing is ever made up in their place.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from simlab.transcript.model import Usage

TRIAGE_SCHEMA_VERSION: Final = 1

FaultType = Literal[
    "wrong_information",
    "wrong_decision",
    "incomplete_resolution",
    "policy_breach",
    "user_side_error",
    "tool_or_provider_failure",
]

FAULT_TYPES: Final[dict[str, str]] = {
    "wrong_information": "the agent stated or used a wrong fact: told the user something false or "
    "unsupported, or passed a wrong value to a tool (an id, an amount, an address)",
    "wrong_decision": "the agent had the right facts but chose the wrong action: the wrong tool, the wrong "
    "option, or an action it should not have taken at all",
    "incomplete_resolution": "the agent stopped short: a needed step was never taken, or the conversation "
    "ended, looped or ran out of turns before the user's goal was met",
    "policy_breach": "the agent broke a rule of the domain's policy: steps out of order, a limit exceeded, a "
    "forbidden action, an action without the user's consent",
    "user_side_error": "the simulated user caused it: it left its script, gave wrong facts, or ended the "
    "conversation early",
    "tool_or_provider_failure": "not the agent's behaviour: a domain tool, a model provider, a judge or "
    "simlab itself failed",
}
assert tuple(FAULT_TYPES) == get_args(FaultType), "FAULT_TYPES must define every FaultType, in order"


class ModeCause(BaseModel):
    """The judge's answer for one failure mode, or why there is none (``undecided``)."""

    model_config = ConfigDict(extra="ignore")
    mode: str = Field(description="The failure mode's signature (transcript/blame.py).")
    blame: str
    trials: int = Field(description="The mode's trials when it was triaged.")
    representative: str = Field(description="unit_id of the trial the judge read.")
    fault_type: FaultType | None = Field(None, description="One of FAULT_TYPES; None: undecided.")
    cause: str | None = Field(None, description="One sentence; None: undecided.")
    undecided: str | None = Field(None, description="Why the judge gave no usable answer; None when decided.")
    attempts: int = Field(0, description="Judge calls made for this mode, retries included.")


class Triage(BaseModel):
    """``triage.json`` in a run's folder: the written causes of its failure modes and what they cost."""

    model_config = ConfigDict(extra="ignore")
    schema_version: int = TRIAGE_SCHEMA_VERSION
    run_id: str
    created_at: str = ""
    judge: dict[str, Any] = Field(default_factory=dict, description="The judge's pin (model, settings).")
    causes: list[ModeCause] = Field(default_factory=list)
    calls: int = Field(0, description="Judge calls made, retries included.")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost of every judge call, summed.")

    def cause_of(self, mode: str) -> ModeCause | None:
        return next((c for c in self.causes if c.mode == mode), None)
