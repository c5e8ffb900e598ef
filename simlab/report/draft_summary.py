"""``summary.json`` of a review folder (``simlab generate``): what was asked, each kept draft
(what it adds to coverage, its rounds, how the reference agent played it), each dropped draft and
why, and what each model role spent; its models, the review folder's layout, and its writing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, Field

from simlab.redact import mask_tree
from simlab.report.draft_play import PLAY_ROLES, Play, Reference
from simlab.runner.store import write_atomic
from simlab.transcript import ModelCall, Usage

if TYPE_CHECKING:
    from simlab.llm.types import ChatModel

SUMMARY_FILE = "summary.json"
PERSONAS = "personas"  # the review folder's folder of new personas
STAGES = ("answer", "id", "validate", "oracle", "lint", "duplicate", "trial", "internal")
AUTHOR: Final = "author"  # the role of the model that writes the drafts (its calls, cost and cache key)


class Round(BaseModel):
    """An earlier round of a draft: the step its answer failed and why (the next round was told)."""

    stage: str
    reason: str


class RoleSpend(BaseModel):
    """What one model role spent: its calls and their usage (an unknown part stays unknown)."""

    ref: str = Field(description="The model or agent that played the role.")
    calls: int = 0
    usage: Usage = Field(default_factory=lambda: Usage(input_tokens=0, output_tokens=0, cost_usd=0.0))


class KeptDraft(BaseModel):
    draft: int = Field(description="Which of the drafts asked for (1…N).")
    id: str
    file: str = Field(description="The scenario file, relative to the review folder.")
    persona: str
    persona_file: str | None = Field(None, description="A new persona's file; None: an existing one.")
    actions: list[str] = Field(description="The expected actions: tool(argument keys), in order.")
    adds: list[str] = Field(description="What the suite with it covers that the suite without it does not.")
    rounds: int = Field(1, description="The model's answers checked for it (1: kept as first written).")
    earlier: list[Round] = Field(default_factory=list, description="Why its earlier rounds failed.")
    played: str | None = Field(None, description="How the reference agent did; None: not played.")
    flag: str | None = Field(None, description="Kept, but read this first (the reference agent failed).")


class DroppedDraft(BaseModel):
    draft: int
    id: str | None = None
    stage: str = Field(description="The step it failed: " + ", ".join(STAGES) + ".")
    reason: str
    rounds: int = Field(1, description="The model's answers checked for it, the last one failed as said.")
    earlier: list[Round] = Field(default_factory=list, description="Why its earlier rounds failed.")


class GenerateSummary(BaseModel):
    """``summary.json`` of a review folder: the last ``simlab generate`` into it."""

    schema_version: int = 1
    created_at: str
    domain: str
    model: dict[str, Any]
    target: str | None = None
    asked: int
    kept: list[KeptDraft] = Field(default_factory=list)
    dropped: list[DroppedDraft] = Field(default_factory=list)
    missing_before: int = Field(description="Coverage gaps of the suite without the drafts.")
    missing_after: int = Field(description="Coverage gaps of the suite with every kept draft.")
    calls: int = Field(0, description="The author model's calls (also roles.author).")
    usage: Usage = Field(
        default_factory=lambda: Usage(input_tokens=0, output_tokens=0, cost_usd=0.0),
        description="The author model's usage (also roles.author).",
    )
    reference: str | None = Field(None, description="The reference agent the drafts were played against.")
    trials: int = Field(0, description="Trials of each draft against it (0: not played).")
    repair_rounds: int = Field(0, description="Rounds a failed draft was asked again at most.")
    roles: dict[str, RoleSpend] = Field(
        default_factory=dict,
        description="What each model role spent: author (the drafts), agent and simulator (the plays). "
        "Absent in files written before the roles were kept.",
    )


def write_summary(out: Path, summary: GenerateSummary) -> GenerateSummary:
    """Write ``summary`` (secrets masked) as ``out/summary.json``; return what was written."""
    out.mkdir(parents=True, exist_ok=True)
    data = mask_tree(summary.model_dump(mode="json"))
    write_atomic(out / SUMMARY_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return GenerateSummary.model_validate(data)


def role_spend(
    model: ChatModel, calls: list[ModelCall], plays: list[Play], reference: Reference | None
) -> dict[str, RoleSpend]:
    """What each role spent: the author's calls, and the agent's and simulator's over every play."""
    from simlab.graders.judge import judge_pin

    roles = {
        AUTHOR: RoleSpend(
            ref=str(judge_pin(model).get("ref", "?")),
            calls=len(calls),
            usage=Usage.total(call.usage for call in calls),
        )
    }
    if reference is None or not plays:
        return roles
    refs = {"agent": reference.ref, "simulator": _simulator_ref(reference)}
    for role in PLAY_ROLES:
        roles[role] = RoleSpend(
            ref=refs[role],
            calls=sum(len(p.calls.get(role, [])) for p in plays),
            usage=Usage.total(p.usage[role] for p in plays if role in p.usage),
        )
    return roles


def _simulator_ref(reference: Reference) -> str:
    try:
        pin = reference.simulator.pin()
    except Exception:  # a minimal simulator without a pin
        return type(reference.simulator).__name__
    return str(pin.ref or pin.kind)
