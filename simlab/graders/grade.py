"""Grade one transcript: the graders the registry and the scenario ask for, then the verdict.

Which graders run is ``registry.graders_for``: the built-in ones, then those a suite and the
scenario add. Deterministic graders make no model call. Judges (rubric, groundedness, LLM drift,
any grader registered with ``judge=True``) are asked only when judges are in scope; without a
judge model their checks are recorded as not run, never passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from simlab.graders.base import Check, GradeContext, Verdict, verdict_of
from simlab.graders.registry import GraderSet, graders_for
from simlab.specs.expect import GraderUse
from simlab.specs.scenario import Scenario
from simlab.transcript import ModelCall


@dataclass
class Graded:
    checks: list[Check]
    verdict: Verdict
    judge_calls: list[ModelCall] = field(default_factory=list)  # every model call a grader made


def graders_of(scenario: Scenario, memo: dict[str, Any], extra: Sequence[GraderUse] = ()) -> GraderSet:
    """The graders of a scenario (``extra``: those its suite adds), resolved once and kept in
    ``memo``, which the trials of one scenario share (``GradeContext.memo``)."""
    found = memo.get("graders")
    if found is None:
        found = memo["graders"] = graders_for(scenario, extra)
    return found


def grade_deterministic(ctx: GradeContext, extra: Sequence[GraderUse] = ()) -> list[Check]:
    """The checks of the synchronous graders that ask no judge: the cheap part, run on every trial."""
    checks: list[Check] = []
    for grader in graders_of(ctx.scenario, ctx.memo, extra).now:
        checks.extend(grader.run(ctx))
    return checks


async def grade(ctx: GradeContext, *, use_judges: bool = True, extra: Sequence[GraderUse] = ()) -> Graded:
    """All checks and the verdict. ``use_judges=False`` keeps judges' checks out of scope (a re-grade
    merges the stored ones) and makes no model call. ``extra``: the graders the suite adds."""
    graders = graders_of(ctx.scenario, ctx.memo, extra)
    checks = grade_deterministic(ctx, extra)
    calls: list[ModelCall] = []
    for grader in graders.later:
        found, made = await grader.arun(ctx)
        checks.extend(found)
        calls.extend(made)
    if use_judges and ctx.transcript.termination.reason.value == "error":
        # the verdict is error whatever a judge says: asking one would only spend money (and, with a
        # failing provider, the retries of the next trials)
        checks.extend(await _judges_not_asked(ctx, graders))
    elif use_judges:
        for judge in graders.judges:
            found, made = await judge.arun(ctx)
            checks.extend(found)
            calls.extend(made)
    return Graded(checks, verdict_of(ctx.transcript, checks), calls)


NOT_ASKED = "not asked: the trial ended in an infrastructure error"


async def _judges_not_asked(ctx: GradeContext, graders: GraderSet) -> list[Check]:
    """The judge checks the scenario asks for, each ``not_run`` with the reason it was not asked."""
    blank = replace(ctx, judge=None)
    out: list[Check] = []
    for judge in graders.judges:
        for check in (await judge.arun(blank))[0]:
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
