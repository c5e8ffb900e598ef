"""Agents that run outside simlab (an HTTP service, pin kind ``http``) act on the world through the
tools simlab serves them, or through tools of their own that simlab cannot see. When such an agent
called none of the served tools, the final state, the trajectory and the policy over its calls say
nothing of what it did: the state, trajectory and policy checks are then ``not_run`` with that
reason, never passed (a forbidden tool it may have called through tools of its own is not seen). An agent
that ran tools of its own (a LangGraph tool node with the team's tools: ``ToolCall.outside``) is
judged on its trajectory, which simlab saw, but not on the final state, which those tools never
touched."""

from __future__ import annotations

from simlab.graders.base import Check, GradeContext
from simlab.transcript import ToolCall, Transcript

__all__ = ["REMOTE_KINDS", "unless_tools_unseen"]

REMOTE_KINDS = frozenset({"http"})  # agent kinds whose tool calls simlab sees only when they use its tools


def tools_unseen(transcript: Transcript, *, state: bool = False) -> str | None:
    """Why the state and trajectory of ``transcript`` cannot be judged, or None. ``state``: also
    why its final state cannot: the agent acted through tools of its own (``ToolCall.outside``),
    which simlab recorded from the framework's events but the domain never ran."""
    own = sorted({e.name for e in transcript.events if isinstance(e, ToolCall) and e.outside})
    if state and own:
        return (
            f"not run: the {transcript.agent.kind} agent called tools of its own ({', '.join(own[:4])}), "
            "which the domain never ran, so the final state says nothing of what they did"
        )
    if transcript.agent.kind not in REMOTE_KINDS or any(isinstance(e, ToolCall) for e in transcript.events):
        return None
    return (
        f"not run: the {transcript.agent.kind} agent called none of the tools simlab served it, so the final "
        "state, the trajectory and its calls say nothing of what it did (it may act through tools of its own)"
    )


def unless_tools_unseen(ctx: GradeContext, checks: list[Check], *, state: bool = False) -> list[Check]:
    """``checks`` as they are, or each of them ``not_run`` with the reason (see the module docstring;
    ``state``: these are state checks)."""
    why = tools_unseen(ctx.transcript, state=state) if checks else None
    if why is None:
        return checks
    return [
        c.model_copy(
            update={
                "status": "not_run",
                "reason": why,
                "score": None,
                "event": None,
                "turn": None,
                "call_id": None,
                "details": {},
            }
        )
        for c in checks
    ]  # no counts either: a check not run counted nothing (head.tool_counts)
