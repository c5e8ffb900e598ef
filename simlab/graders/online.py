"""Grading observed trials (imported production conversations): the reference-free checks only.

Why these choices:

- An observed trial has no reference and no environment: checks that need one (end state,
  expected actions, predicate, trajectory, first tool call, graph, ``owner`` rules, which look the
  owner up in an initial state) are reported ``not_run`` when the rules ask for them, never passed.
  ``no_write_after_refusal`` needs to know which tools write: without a ``domain:`` it is not run.
- The users were real: the checks of a simulated user (drift, the drift judge) do not apply.
- A trial without content (spans recorded with content capture off: no text of the user's or the
  agent's) is never passed: a hard ``message_content`` check is not run, and so is every check that
  reads text (``after_confirmation``, ``no_write_after_refusal``, ``python:`` rules, which may read
  it, rubric, groundedness, response match); the checks on tool calls still run, so a violation
  there still fails it.
- Sampling is seeded and per trace (sha256 of seed and unit id), so the same seed picks the same
  traces whatever else is in the file; every trace a cheap heuristic flags is graded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from simlab.env.domain import Domain
from simlab.graders.base import GradeContext, verdict_of
from simlab.graders.efficiency import LOOP_REPEATS, call_key
from simlab.graders.grade import Graded, grade
from simlab.graders.registry import GraderSet, graders_for
from simlab.specs.expect import Expect
from simlab.specs.online import Flags, OnlineRules, Sampling
from simlab.specs.scenario import Scenario, UserSpec
from simlab.traces.conversation import has_content
from simlab.transcript import ErrorEvent, ToolCall, ToolResult, Transcript
from simlab.transcript.checks import Check

NOT_ONLINE = ("state", "trajectory", "first_tool_call", "graph", "drift", "drift_llm")
NO_REFERENCE = "not run: an observed trial has no reference"
NO_ENVIRONMENT = "not run: an observed trial has no environment"
NO_CONTENT_CHECK = "message_content"
NO_CONTENT = (
    "not run: the trace carries no message content (recorded with content capture off; "
    "`simlab import` says how to turn it on)"
)


class _NoState(BaseModel):
    pass


def observed_domain(domain: Domain | None) -> Domain:
    """The domain graders see: the one the rules name, or one that knows no tool."""
    return domain or Domain(name="observed", state_model=_NoState, tools=[], policy="")


def trace_flags(t: Transcript, flags: Flags) -> list[str]:
    """Why a trace deserves grading whatever the sample says (empty: nothing stands out)."""
    found = []
    failed = [e for e in t.events if isinstance(e, ToolResult) and not e.ok]
    if flags.error and (
        t.observed and t.observed.error or failed or any(isinstance(e, ErrorEvent) for e in t.events)
    ):
        found.append("error")
    keys = [call_key(e) for e in t.events if isinstance(e, ToolCall)]
    if flags.loop and any(
        len(set(keys[i : i + LOOP_REPEATS])) == 1 for i in range(len(keys) - LOOP_REPEATS + 1)
    ):
        found.append("loop")
    long_users = flags.long_user_turns is not None and t.user_turns() > flags.long_user_turns
    long_calls = flags.long_tool_calls is not None and len(keys) > flags.long_tool_calls
    if long_users or long_calls:
        found.append("long")
    if flags.negative_feedback and t.observed is not None and t.observed.negative_feedback:
        found.append("negative_feedback")
    return found


def draw(unit_id: str, seed: int) -> float:
    """A uniform number in [0, 1) fixed by seed and unit id."""
    return int(hashlib.sha256(f"{seed}:{unit_id}".encode()).hexdigest()[:16], 16) / 2**64


def hidden_content(t: Transcript) -> str | None:
    """Why the text of an observed trial cannot be judged though some of it is there (the source left
    model calls' input or output unrecorded: OpenInference's OPENINFERENCE_HIDE_INPUTS/OUTPUTS), or None."""
    hidden = t.observed.hidden if t.observed is not None else {}
    sides = [f"{n} model call(s)' {side}" for side, n in sorted(hidden.items()) if n]
    if not sides:
        return None
    return (
        f"not run: the trace left {' and '.join(sides)} unrecorded, so part of what was said is missing "
        "(`simlab import` says how to record it)"
    )


def picked_by(unit_id: str, flags: list[str], sampling: Sampling) -> str | None:
    """``flag``, ``sample`` or None (not graded)."""
    if flags:
        return "flag"
    return "sample" if draw(unit_id, sampling.seed) < sampling.rate else None


@dataclass
class OnlineGrader:
    """The rules, prepared once for every trace."""

    rules: OnlineRules
    domain: Domain
    judge: Any = None

    def __post_init__(self) -> None:
        self.expect, self.skipped = _online_expect(
            self.rules.expect, has_domain=self.rules.domain is not None
        )
        self.textless, textless_skipped = _without_text(self.expect)
        self.textless_skipped = [
            *self.skipped,
            *textless_skipped,
            Check(name=NO_CONTENT_CHECK, kind="custom", status="not_run", hard=True, reason=NO_CONTENT),
        ]
        self.memo: dict[str, Any] = {}
        self.textless_memo: dict[str, Any] = {}  # graders memoize per scenario: its expect differs

    def scenario_for(self, t: Transcript, expect: Expect | None = None) -> Scenario:
        return Scenario(
            id=t.scenario_id,
            title="observed production conversations",
            domain=self.domain.name,
            persona="observed",
            user=UserSpec(goal="(a real user: unknown)"),
            expect=self.expect if expect is None else expect,
        )

    async def grade(self, t: Transcript, flags: list[str], by: str) -> Graded:
        hidden = hidden_content(t)
        content = has_content(t) and hidden is None
        expect, skipped = (self.expect, self.skipped) if content else (self.textless, self.textless_skipped)
        if hidden is not None:  # part of what was said is missing: no text check may judge the rest
            said = {"reason": hidden}
            skipped = [c.model_copy(update=said) if c.reason == NO_CONTENT else c for c in skipped]
        memo = self.memo if content else self.textless_memo
        scenario = self.scenario_for(t, expect)
        if "graders" not in memo:
            chosen = graders_for(scenario)
            memo["graders"] = GraderSet([g for g in chosen.graders if g.name not in NOT_ONLINE])
        ctx = GradeContext(transcript=t, scenario=scenario, domain=self.domain, judge=self.judge, memo=memo)
        graded = await grade(ctx)
        note = Check(
            name="trace_flags",
            kind="custom",
            status="fail" if flags else "pass",
            hard=False,
            reason=(f"flagged: {', '.join(flags)}" if flags else "no heuristic flagged it")
            + f"; graded because {'it was flagged' if by == 'flag' else 'the random sample drew it'}",
            details={"flags": flags, "picked_by": by},
        )
        checks = [*graded.checks, *skipped, note]
        return Graded(checks, verdict_of(t, checks), graded.judge_calls)


def _online_expect(expect: Expect, *, has_domain: bool) -> tuple[Expect, list[Check]]:
    """The expect block without what cannot run on an observed trial, and a not-run check for each
    of those."""
    skipped: list[Check] = []
    for i, assertion in enumerate(expect.state):
        skipped.append(
            Check(
                name=assertion.name or f"state[{i}] {assertion.path}",
                kind="state",
                status="not_run",
                reason=f"{NO_ENVIRONMENT} (no end state)",
            )
        )
    if expect.expected_actions:
        skipped.append(
            Check(
                name="expected_state",
                kind="state",
                status="not_run",
                reason=f"{NO_REFERENCE} state to replay expected_actions on",
            )
        )
    if expect.predicate:
        skipped.append(
            Check(
                name=f"predicate:{expect.predicate}",
                kind="state",
                status="not_run",
                reason=f"{NO_ENVIRONMENT} (no end state)",
            )
        )
    if expect.trajectory is not None:
        skipped.append(
            Check(
                name="trajectory",
                kind="trajectory",
                status="not_run",
                reason=f"{NO_REFERENCE}: a trajectory is a reference; use rules for what must hold",
            )
        )
    if expect.first_tool_call is not None:
        skipped.append(
            Check(
                name="first_tool_call",
                kind="trajectory",
                status="not_run",
                reason=f"{NO_REFERENCE}: the first step was not probed in production",
            )
        )
    rules = []
    for rule in expect.rules:
        if rule.owner is not None:
            skipped.append(
                Check(
                    name=f"owner({', '.join(k for k in rule.owner if '.' in k)})",
                    kind="policy",
                    status="not_run",
                    reason=f"{NO_ENVIRONMENT}: owners are looked up in its initial state",
                )
            )
        elif rule.no_write_after_refusal and not has_domain:
            skipped.append(
                Check(
                    name="no_write_after_refusal",
                    kind="policy",
                    status="not_run",
                    reason="not run: which tools write is unknown; name the domain (domain:) in the "
                    "rules file",
                )
            )
        else:
            rules.append(rule)
    kept = expect.model_copy(
        update={
            "state": [],
            "expected_actions": [],
            "predicate": None,
            "trajectory": None,
            "first_tool_call": None,
            "graph_trajectory": None,
            "graph_state": [],
            "rules": rules,
            "drift_judge": False,
        }
    )
    return kept, skipped


def _without_text(expect: Expect) -> tuple[Expect, list[Check]]:
    """The expect block without the checks that read what was said, and a not-run check for each
    (for a trial whose trace carries no message content)."""
    skipped: list[Check] = []
    rules = []
    for rule in expect.rules:
        name = (
            f"after_confirmation({rule.after_confirmation})"
            if rule.after_confirmation
            else "no_write_after_refusal"
            if rule.no_write_after_refusal
            else f"python({rule.python})"
            if rule.python
            else None
        )
        if name is None:  # a rule on the tool calls alone
            rules.append(rule)
            continue
        name = rule.name or name
        skipped.append(Check(name=name, kind="policy", status="not_run", hard=True, reason=NO_CONTENT))
    for item in expect.rubric:
        skipped.append(
            Check(
                name=f"rubric:{item.id}", kind="rubric", status="not_run", hard=item.hard, reason=NO_CONTENT
            )
        )
    if expect.groundedness:
        skipped.append(Check(name="groundedness", kind="groundedness", status="not_run", reason=NO_CONTENT))
    if expect.response_match is not None:
        skipped.append(Check(name="response_match", kind="custom", status="not_run", reason=NO_CONTENT))
    kept = expect.model_copy(
        update={"rules": rules, "rubric": [], "groundedness": False, "response_match": None}
    )
    return kept, skipped
