"""ADK's criteria as a simlab grader, computed on every trial the way ADK computes them on its one
run per case (google-adk 2.13, ``trajectory_evaluator.py``, ``final_response_match_v1.py``):

- ``tool_trajectory_avg_score``: per invocation 1.0 or 0.0 as the agent's tool calls match the
  expected ones (EXACT: same calls in the same order, no extras; IN_ORDER: the expected calls in
  order, extras allowed; ANY_ORDER: each expected call matched by a distinct call), a call
  matching when its name and, unless ``ignore_args``, its arguments are equal; averaged over the
  case's invocations. A failure's reason names the first invocation that differs and the call
  (``trajectory.py``), and the check points at that invocation's user message.
- ``response_match_score``: per invocation the ROUGE-1 F-measure of the agent's final response
  against the reference, on the tokens google-adk 2.13 counts (``simlab/graders/rouge.py``),
  averaged.

An invocation is a user message and everything until the next one; its final response is the
agent's last message in it. One difference, on transcripts ADK never produces: an invocation
the trial never reached (it ended early) scores 0, where ADK's ``zip`` would drop it.

Each criterion is one hard check, ``adk:<criterion>``, passing when its average meets the
threshold; its score is ADK's per-case score. Criteria graded elsewhere are set up by the import:
``rubric_based_final_response_quality_v1`` → simlab's rubric items, ``hallucinations_v1`` →
groundedness, ``final_response_match_v2`` → the ``adk_judge`` grader (``judge.py``); any other
criterion gives a soft ``not_run`` check saying simlab does not compute it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simlab.adk.trajectory import same_call, trajectory_difference
from simlab.graders.base import Check, GradeContext, check_at
from simlab.graders.registry import grader
from simlab.graders.rouge import RougeMissing, rouge1_f
from simlab.inert import one_line
from simlab.transcript import AgentMessage, InvalidCall, ToolCall, Transcript, UserMessage

__all__ = ["actual_invocations", "adk_criteria", "trajectory_match"]

MAPPED = {
    "rubric_based_final_response_quality_v1": "rubric",
    "hallucinations_v1": "groundedness",
    "final_response_match_v2": "adk_judge",
}  # graded by other graders, set up by the import


@dataclass
class ActualInvocation:
    user: str
    at: int = 0  # the index of its user message in the transcript
    calls: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    final_response: str = ""


def actual_invocations(transcript: Transcript) -> list[ActualInvocation]:
    """The trial cut into ADK invocations: each user message, the valid tool calls and the last agent
    message until the next one (an invalid call never ran, so it is no tool use)."""
    invalid = {e.call_id for e in transcript.events if isinstance(e, InvalidCall)}
    out: list[ActualInvocation] = []
    for index, event in enumerate(transcript.events):
        if isinstance(event, UserMessage):
            out.append(ActualInvocation(user=event.text, at=index))
        elif out and isinstance(event, ToolCall) and event.call_id not in invalid:
            out[-1].calls.append((event.name, event.arguments))
        elif out and isinstance(event, AgentMessage):
            out[-1].final_response = event.text
    return out


def trajectory_match(
    actual: list[tuple[str, Any]], expected: list[dict[str, Any]], match_type: str, ignore_args: bool = False
) -> bool:
    """ADK's EXACT / IN_ORDER / ANY_ORDER match of one invocation's calls."""
    if match_type == "EXACT":
        return len(actual) == len(expected) and all(
            same_call(a, e, ignore_args) for a, e in zip(actual, expected)
        )
    if not expected:
        return True
    if match_type == "IN_ORDER":
        position = 0
        for call in actual:
            if same_call(call, expected[position], ignore_args):
                position += 1
                if position == len(expected):
                    return True
        return False
    left = list(actual)  # ANY_ORDER: each expected call takes the first unused match
    for wanted in expected:
        hit = next((i for i, call in enumerate(left) if same_call(call, wanted, ignore_args)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def _average(
    name: str,
    kind: Any,
    scores: list[float],
    threshold: float,
    per: list[dict[str, Any]],
    note: str = "",
    why: str = "",
    where: dict[str, Any] | None = None,
) -> Check:
    score = sum(scores) / len(scores)
    met = score >= threshold
    because = f"; {why}" if why and not met else ""
    return Check(
        name=f"adk:{name}",
        kind=kind,
        status="pass" if met else "fail",
        score=score,
        reason=f"{score:.3f} over {len(scores)} invocations {'meets' if met else 'is below'} the threshold "
        f"{threshold:g}{note}{because}",
        details={"threshold": threshold, "invocations": per},
        **((where or {}) if not met else {}),
    )


def _trajectory(
    ctx: GradeContext,
    actual: list[ActualInvocation],
    expected: list[dict[str, Any]],
    spec: dict[str, Any],
    note: str,
) -> Check:
    """Per invocation 1 or 0; a failure's reason names the first invocation that differs and its call."""
    mode, ignore = str(spec.get("match_type", "EXACT")), bool(spec.get("ignore_args", False))
    per: list[dict[str, Any]] = []
    for i, wanted in enumerate(expected):
        tools = wanted.get("tool_uses") or []
        if i >= len(actual):
            per.append({"score": 0.0, "why": "the trial never reached it"})
        elif trajectory_match(actual[i].calls, tools, mode, ignore):
            per.append({"score": 1.0})
        else:
            per.append({"score": 0.0, "why": trajectory_difference(actual[i].calls, tools, mode, ignore)})
    failed = [i for i, p in enumerate(per) if p["score"] == 0.0]
    why, where = "", None
    if failed:
        first = failed[0]
        user = expected[first].get("user") or (actual[first].user if first < len(actual) else "")
        more = f" (and {len(failed) - 1} more invocations differ)" if len(failed) > 1 else ""
        why = one_line(
            f"invocation {first + 1} of {len(expected)} ({user[:60]!r}): {per[first]['why']}{more}"
        )
        where = check_at(ctx.transcript, actual[first].at) if first < len(actual) else None
    return _average(
        "tool_trajectory_avg_score",
        "trajectory",
        [p["score"] for p in per],
        float(spec.get("threshold", 0.0)),
        per,
        note + f" ({mode})",
        why,
        where,
    )


def expected_tools(params: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """The tools the case's expected invocations name, where the trajectory criterion checks them
    (``simlab validate`` looks them up in the scenario's domain)."""
    if "tool_trajectory_avg_score" not in (params.get("criteria") or {}):
        return []
    return [
        (("invocations", i, "tool_uses", j, "name"), str(call.get("name")))
        for i, invocation in enumerate(params.get("invocations") or [])
        for j, call in enumerate(invocation.get("tool_uses") or [])
        if isinstance(call, dict)
    ]


@grader("adk", kind="custom", tools=expected_tools)
def adk_criteria(
    criteria: dict[str, dict[str, Any]], invocations: list[dict[str, Any]] | None = None
) -> Callable[[GradeContext], list[Check]]:
    """ADK's criteria on one trial. ``invocations``: the case's expected invocations (``user``,
    ``final_response``, ``tool_uses`` of ``{name, args}``); none for a user-simulation case."""
    expected = list(invocations or [])

    def grade(ctx: GradeContext) -> list[Check]:
        actual = actual_invocations(ctx.transcript)
        checks: list[Check] = []
        for name, spec in criteria.items():
            threshold = float(spec.get("threshold", 0.0))
            if name in MAPPED:
                continue  # graded by simlab's own checks, set up by the import
            if name not in ("tool_trajectory_avg_score", "response_match_score"):
                checks.append(
                    Check(
                        name=f"adk:{name}",
                        kind="custom",
                        status="not_run",
                        hard=False,
                        reason=f"simlab does not compute ADK's {name} yet",
                    )
                )
                continue
            if not expected:
                checks.append(
                    Check(
                        name=f"adk:{name}",
                        kind="custom",
                        status="not_run",
                        hard=False,
                        reason=f"{name} needs the expected invocations of a fixed conversation; this "
                        "case is a user simulation",
                    )
                )
                continue
            missing = max(0, len(expected) - len(actual))
            note = f" ({missing} invocations never reached score 0)" if missing else ""
            if name == "tool_trajectory_avg_score":
                checks.append(_trajectory(ctx, actual, expected, spec, note))
            else:
                try:
                    scores = [
                        rouge1_f(a.final_response, e.get("final_response") or "")
                        for a, e in zip(actual, expected)
                    ] + [0.0] * missing
                except RougeMissing as exc:
                    checks.append(Check(name=f"adk:{name}", kind="custom", status="error", reason=str(exc)))
                    continue
                checks.append(
                    _average(name, "custom", scores, threshold, [{"score": s} for s in scores], note)
                )
        return checks

    return grade
