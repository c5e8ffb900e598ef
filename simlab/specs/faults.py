"""Deterministic tool faults: a scenario's ``faults:`` block.

Why: agents rarely recover from a failing tool, and a real backend fails when it pleases. A fault
here fires on a tool's Nth call in the trial, or on each call with a probability drawn from the
trial's seed, so the same trial always meets the same faults and a re-run is a like-for-like test.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from simlab.specs.base import SpecModel

FaultKind = Literal["error", "timeout", "override", "stale"]

DEFAULT_ERROR = "the service is temporarily unavailable; please try again"


class ToolFault(SpecModel):
    """One fault on one tool. The tool does not run when its fault fires (``stale`` runs it on the
    trial's initial state and keeps nothing), so a fault never leaves anything half-done."""

    tool: str = Field(description="The tool's name in the scenario's domain.")
    kind: FaultKind = Field(
        description="error: the tool fails with `message` (a domain error); timeout: the call "
        "is cut off as a hung tool is; override: the call succeeds with `result` "
        "but does nothing; stale: a READ tool answers from the trial's initial "
        "state, as a lagging replica would."
    )
    on_call: int | None = Field(
        None, ge=1, description="Fire on this call of the tool in the trial (1 = the first)."
    )
    probability: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Fire on each call with this probability, drawn from the trial's "
        "seed (the same trial meets the same faults).",
    )
    message: str | None = Field(
        None, description=f"kind error: what the agent is told (default: {DEFAULT_ERROR!r})."
    )
    result: Any = Field(None, description="kind override: the result the agent gets instead of the tool's.")

    @model_validator(mode="after")
    def _one_trigger(self) -> ToolFault:
        if (self.on_call is None) == (self.probability is None):
            raise ValueError("give exactly one of on_call (the Nth call) or probability (seeded, per call)")
        if self.message is not None and self.kind != "error":
            raise ValueError(f"message is for kind error; a {self.kind} fault has none")
        if self.kind == "override" and "result" not in self.model_fields_set:
            raise ValueError("kind override needs result: the data the agent gets instead of the tool's")
        if self.kind != "override" and "result" in self.model_fields_set:
            raise ValueError(f"result is for kind override; a {self.kind} fault has none")
        return self
