"""Checks and verdicts: the vocabulary every grader speaks.

A check is one verdict of one grader on one transcript. Its ``status`` is pass, fail, not_run
(e.g. no judge model configured: never counted as a pass) or error (the grader itself could not
decide: a judge that kept answering malformed JSON). A trial's verdict combines its checks:

    error    the trial ended in an infrastructure error, or a hard check could not be decided
    invalid  the simulated user broke its script (a hard drift check failed)
    fail     a hard check failed (outcome, required actions, forbidden events, budgets, hard rubric)
    pass     everything hard holds: P = O ∧ R ∧ ¬F ∧ B ∧ hard-rubric
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from typing import Any, Callable

from simlab.env.domain import Domain
from simlab.specs import Persona, Scenario
from simlab.transcript import Transcript
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
    return "pass"


def check_at(transcript: Transcript, index: int | None) -> dict[str, Any]:
    """``event``, ``turn`` and ``call_id`` for a check that points at ``transcript.events[index]``."""
    if index is None:
        return {}
    event = transcript.events[index]
    return {"event": index, "turn": getattr(event, "turn", None), "call_id": getattr(event, "call_id", None)}


_MEMO: dict[tuple[str, int, int], tuple[Any, Any, Any]] = {}
_MEMO_SIZE = 1024


def scenario_memo(ctx: GradeContext, name: str, compute: Callable[[GradeContext], Any]) -> Any:
    """``compute(ctx)``, computed once per (domain, scenario): what every trial of a scenario
    shares (its initial state, the identifiers its facts name). Return immutable values only.
    The memo keeps the domain and scenario objects, so their ids cannot be reused under it."""
    key = (name, id(ctx.domain), id(ctx.scenario))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is ctx.domain and hit[1] is ctx.scenario:
        return hit[2]
    value = compute(ctx)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = (ctx.domain, ctx.scenario, value)
    return value


def initial_snapshot(ctx: GradeContext) -> dict[str, Any]:
    """A fresh copy of the scenario's initial state as JSON data (raises like ``build_state``)."""
    data = scenario_memo(ctx, "initial_state", lambda c: marshal.dumps(
        c.domain.build_state(c.scenario.initial_state).model_dump(mode="json")))
    return marshal.loads(data)  # type: ignore[no-any-return]  # marshal: the fastest copy of JSON data
