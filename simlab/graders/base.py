"""Checks and verdicts: the vocabulary every grader speaks.

A check is one verdict of one grader on one transcript. Its ``status`` is pass, fail, not_run
(e.g. no judge model configured: never counted as a pass) or error (the grader itself could not
decide: a judge that kept answering malformed JSON). A trial's verdict combines its checks:

    error     the trial ended in an infrastructure error, or a hard check could not be decided
    invalid   the simulated user broke its script (a hard drift check failed)
    fail      a hard check failed (outcome, required actions, forbidden events, budgets, hard rubric)
    unjudged  no hard check failed, but one did not run (no judge for a hard rubric item, an unknown
              cost under a cost budget): nobody knows whether the trial passed
    pass      every hard check ran and held: P = O ∧ R ∧ ¬F ∧ B ∧ hard-rubric
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simlab.env.domain import Domain
from simlab.specs import Persona, Scenario
from simlab.transcript import AgentMessage, Transcript
from simlab.transcript.checks import Check, CheckKind, CheckStatus, Verdict

__all__ = ["Check", "CheckKind", "CheckStatus", "GradeContext", "Verdict", "check_at", "initial_snapshot",
           "scenario_memo", "verdict_of"]

@dataclass
class GradeContext:
    """Everything a grader may look at. Judges get a chat model; deterministic graders ignore it."""

    transcript: Transcript
    scenario: Scenario
    domain: Domain
    judge: Any = None  # a simlab.llm ChatModel, or None when no judge is configured
    persona: Persona | None = None  # the resolved persona (a scenario may name it by id)
    memo: dict[str, Any] = field(default_factory=dict)
    """What every trial of one scenario shares (initial state, reference replay): a caller that
    grades many trials passes the same dict to all trials of a scenario, and it is computed once."""


def verdict_of(transcript: Transcript, checks: list[Check]) -> Verdict:
    if transcript.termination.reason.value == "error":
        return "error"
    hard = [c for c in checks if c.hard]
    if any(c.kind == "drift" and c.status == "fail" for c in hard):
        return "invalid"
    if any(c.status == "fail" for c in hard):
        return "fail"
    if any(c.status == "error" for c in hard):
        return "error"
    if any(c.status == "not_run" for c in hard):
        return "unjudged"
    return "pass"


def last_agent_message(transcript: Transcript) -> int | None:
    """The index of the agent's last message in the transcript, or None when it never spoke."""
    return next((i for i in range(len(transcript.events) - 1, -1, -1)
                 if isinstance(transcript.events[i], AgentMessage)), None)


def check_at(transcript: Transcript, index: int | None) -> dict[str, Any]:
    """``event``, ``turn`` and ``call_id`` for a check that points at ``transcript.events[index]``."""
    if index is None:
        return {}
    event = transcript.events[index]
    return {"event": index, "turn": getattr(event, "turn", None), "call_id": getattr(event, "call_id", None)}


def scenario_memo(ctx: GradeContext, name: str, compute: Callable[[GradeContext], Any]) -> Any:
    """``compute(ctx)``, kept in ``ctx.memo`` under ``name``. Return immutable values only: every
    trial of the scenario gets the same object."""
    if name not in ctx.memo:
        ctx.memo[name] = compute(ctx)
    return ctx.memo[name]


def initial_snapshot(ctx: GradeContext) -> dict[str, Any]:
    """A fresh copy of the scenario's initial state as JSON data (raises like ``build_state``)."""
    data = scenario_memo(ctx, "initial_state", lambda c: marshal.dumps(
        c.domain.build_state(c.scenario.initial_state).model_dump(mode="json")))
    return marshal.loads(data)  # marshal: the fastest copy of JSON data
