"""The single-step check (``expect.first_tool_call``): given the opening message, is the agent's
first decision the right tool with the right arguments?

It grades the ``pending_tool_call`` event of the probe the conversation loop runs before the first
turn: the agent's first step taken on a throwaway copy (its own memory; for LangGraph a separate
thread stopped by ``interrupt_before`` its tool node; for other agents a tool that refuses to run),
so the decided call never ran and changed nothing. Arguments compare as in ``trajectory``: only
those the spec names, with its comparators. No probe event (the scenario was played before the
check existed) is ``not_run``; an agent that answered in text instead of calling a tool fails.
"""

from __future__ import annotations

from collections.abc import Callable

from simlab.graders.base import Check, GradeContext, check_at
from simlab.graders.comparators import ComparatorError, call_mismatch, describe_spec
from simlab.graders.registry import grader
from simlab.transcript import PendingToolCall, ToolCall

__all__ = ["grade_first_tool_call"]

NAME = "first_tool_call"


def grade_first_tool_call(ctx: GradeContext) -> list[Check]:
    spec = ctx.scenario.expect.first_tool_call
    if spec is None:
        return []
    found = next(
        ((i, e) for i, e in enumerate(ctx.transcript.events) if isinstance(e, PendingToolCall)), None
    )
    if found is None:
        return [
            Check(
                name=NAME,
                kind="trajectory",
                status="not_run",
                reason="no single-step probe was recorded (the trial ended before the agent's first turn)",
            )
        ]
    index, pending = found
    where = check_at(ctx.transcript, index)
    expected = describe_spec(spec)
    if pending.name is None:
        said = (pending.reply or "").strip().replace("\n", " ")
        said = said if len(said) <= 80 else said[:79] + "…"
        return [
            Check(
                name=NAME,
                kind="trajectory",
                status="fail",
                **where,
                reason=f"expected {expected} first; the agent answered in text without a tool call: {said!r}",
            )
        ]
    call = ToolCall(
        turn=pending.turn,
        call_id=pending.call_id or "pending",
        name=pending.name,
        arguments=pending.arguments,
        raw_arguments=pending.raw_arguments,
    )
    try:
        why = call_mismatch(spec, call, True)
    except ComparatorError as exc:
        return [Check(name=NAME, kind="trajectory", status="error", reason=f"argument comparator: {exc}")]
    shown = f"{pending.name}({pending.raw_arguments})"
    details = {"pending": shown, "stopped_at": pending.stopped_at, "executed": False}
    if why is None:
        return [
            Check(
                name=NAME,
                kind="trajectory",
                status="pass",
                details=details,
                reason=f"the first decision is {shown}, as expected (stopped at {pending.stopped_at}, not "
                "run)",
            )
        ]
    return [
        Check(
            name=NAME,
            kind="trajectory",
            status="fail",
            details=details,
            **where,
            reason=f"expected {expected} first, the agent decided {shown}: {why} (stopped at "
            f"{pending.stopped_at}, not run)",
        )
    ]


@grader("first_tool_call", kind="trajectory")
def first_tool_call_grader() -> Callable[[GradeContext], list[Check]]:
    """The single-step check: the agent's first decision (``expect.first_tool_call``)."""
    return grade_first_tool_call
