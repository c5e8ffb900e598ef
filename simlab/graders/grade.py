"""Grade one transcript: every configured grader, then the verdict.

Deterministic graders make no model call. Judges (rubric, groundedness, LLM drift) run only
when a judge model is given; without one their checks are recorded as not run, never passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simlab.graders.base import Check, GradeContext, Verdict, verdict_of
from simlab.graders.drift import grade_drift
from simlab.graders.efficiency import grade_efficiency
from simlab.graders.graph import grade_graph
from simlab.graders.policy import grade_policy
from simlab.graders.single_step import grade_first_tool_call
from simlab.graders.state import grade_state
from simlab.graders.trajectory import grade_trajectory
from simlab.transcript import ModelCall

DETERMINISTIC = (grade_state, grade_trajectory, grade_policy, grade_efficiency, grade_drift, grade_first_tool_call,
                 grade_graph)


@dataclass
class Graded:
    checks: list[Check]
    verdict: Verdict
    judge_calls: list[ModelCall] = field(default_factory=list)


def grade_deterministic(ctx: GradeContext) -> list[Check]:
    checks: list[Check] = []
    for grader in DETERMINISTIC:
        checks.extend(grader(ctx))
    return checks


async def grade(ctx: GradeContext, *, use_judges: bool = True) -> Graded:
    """All checks and the verdict. ``use_judges=False`` keeps stored judge checks out of scope
    (the caller merges them) and makes no model call."""
    checks = grade_deterministic(ctx)
    calls: list[ModelCall] = []
    if use_judges and ctx.transcript.termination.reason.value == "error":
        # the verdict is error whatever a judge says: asking one would only spend money (and, with a
        # failing provider, the retries of the next trials)
        checks.extend(await _judges_not_asked(ctx))
    elif use_judges:
        from simlab.graders.drift_judge import grade_drift_llm
        from simlab.graders.groundedness import grade_groundedness
        from simlab.graders.judge import grade_rubric

        judges = [grade_rubric, grade_groundedness]
        if ctx.scenario.expect.drift_judge:
            judges.append(grade_drift_llm)
        for judge in judges:
            outcome = await judge(ctx)
            checks.extend(outcome.checks)
            calls.extend(outcome.calls)
    return Graded(checks, verdict_of(ctx.transcript, checks), calls)


NOT_ASKED = "not asked: the trial ended in an infrastructure error"


async def _judges_not_asked(ctx: GradeContext) -> list[Check]:
    """The judge checks the scenario asks for, each ``not_run`` with the reason it was not asked."""
    from dataclasses import replace

    from simlab.graders.drift_judge import grade_drift_llm
    from simlab.graders.groundedness import grade_groundedness
    from simlab.graders.judge import grade_rubric

    blank = replace(ctx, judge=None)
    judges = [grade_rubric, grade_groundedness] + ([grade_drift_llm] if ctx.scenario.expect.drift_judge else [])
    out: list[Check] = []
    for judge in judges:
        for check in (await judge(blank)).checks:
            out.append(check.model_copy(update={"reason": NOT_ASKED}) if check.status == "not_run" else check)
    return out


def summarize_changes(before: list[dict[str, Any]], after: list[Check]) -> list[str]:
    """Lines naming the checks whose status changed between two gradings of one trial."""
    old = {c["name"]: c.get("status") for c in before}
    new = {c.name: c.status for c in after}
    lines = []
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            lines.append(f"{name}: {old.get(name, 'absent')} → {new.get(name, 'absent')}")
    return lines
