"""Trajectory checks: did the agent make the reference tool calls, in the way the scenario asks?

The agent's calls are its ``ToolCall`` events in order. A call with an ``InvalidCall`` event of the
same ``call_id`` (unknown tool, arguments that fail the schema) never matches a reference call.

Modes (one hard check ``trajectory:<mode>``):
    exact      same length, position by position
    in_order   the reference is a subsequence of the calls (extras allowed between)
    any_order  multiset: each reference call matched by a distinct call, order free, extras allowed
    subset     set semantics: every call matches some reference call (nothing outside the reference)
    superset   set semantics: every reference call matches at least one call

Soft ``tool_precision`` / ``tool_recall`` use the multiset overlap (a maximum one-to-one matching).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simlab.graders.base import Check, GradeContext, check_at, last_agent_message
from simlab.graders.comparators import ComparatorError, call_matches, call_mismatch, describe_spec
from simlab.graders.registry import grader
from simlab.graders.served import unless_tools_unseen
from simlab.specs.expect import CallSpec
from simlab.transcript import InvalidCall, ToolCall, Transcript

__all__ = ["agent_calls", "grade_trajectory", "max_matching"]

Ref = CallSpec | str
Calls = list[tuple[int, ToolCall, bool]]  # (event index, call, valid)


def agent_calls(transcript: Transcript) -> Calls:
    """Every tool call in order with its event index and whether it was valid."""
    invalid = {e.call_id for e in transcript.events if isinstance(e, InvalidCall)}
    return [
        (i, e, e.call_id not in invalid) for i, e in enumerate(transcript.events) if isinstance(e, ToolCall)
    ]


def max_matching(refs: list[Ref], calls: Calls, match: Callable[[int, int], bool]) -> dict[int, int]:
    """A maximum one-to-one matching reference index → call index (augmenting paths; sizes are small)."""
    owner: dict[int, int] = {}  # call position -> ref index

    def augment(r: int, seen: set[int]) -> bool:
        for c in range(len(calls)):
            if c in seen or not match(r, c):
                continue
            seen.add(c)
            if c not in owner or augment(owner[c], seen):
                owner[c] = r
                return True
        return False

    for r in range(len(refs)):
        augment(r, set())
    augment = None  # type: ignore[assignment]  # a recursive closure is a reference cycle: break it
    return {r: c for c, r in owner.items()}


def _show_call(call: ToolCall, valid: bool) -> str:
    text = f"{call.name}({call.raw_arguments or ''})"
    return text if valid else f"{text} [invalid]"


def _near_miss(ref: Ref, calls: Calls, start: int = 0) -> int | None:
    """Position of the first call to the same tool from ``start``: the event a missing call likely was."""
    return next((p for p in range(start, len(calls)) if calls[p][1].name == _tool(ref)), None)


def _missing(
    ref: Ref, calls: Calls, start: int, fallback: int | None, where: str = ""
) -> tuple[str, int | None]:
    near = _near_miss(ref, calls, start)
    if near is not None:
        idx, call, valid = calls[near]
        why = call_mismatch(ref, call, valid) if valid else None  # [invalid] already says why
        return (
            f"{describe_spec(ref)} is missing{where}; nearest is {_show_call(call, valid)} at event {idx}"
            + (f" ({why})" if why else ""),
            idx,
        )
    later = " later" if start else ""
    return f"{describe_spec(ref)} is missing{where} (no{later} call to {_tool(ref)})", fallback


def _tool(ref: Ref) -> str:
    return ref if isinstance(ref, str) else ref.tool


def _exact(refs: list[Ref], calls: Calls, m: Callable[[int, int], bool]) -> tuple[bool, str, int | None]:
    for p in range(max(len(refs), len(calls))):
        if p >= len(calls):
            last = calls[-1][0] if calls else None
            return (
                False,
                f"call {p + 1}: expected {describe_spec(refs[p])}, only {len(calls)} calls were made",
                last,
            )
        idx, call, valid = calls[p]
        shown = f"{_show_call(call, valid)} at event {idx}"
        if p >= len(refs):
            return False, f"call {p + 1}: unexpected {shown} (the reference has {len(refs)} calls)", idx
        if not m(p, p):
            return False, f"call {p + 1}: expected {describe_spec(refs[p])}, got {shown}", idx
    return True, f"all {len(refs)} calls match position by position", None


def _in_order(refs: list[Ref], calls: Calls, m: Callable[[int, int], bool]) -> tuple[bool, str, int | None]:
    pos, last = 0, None
    for r, ref in enumerate(refs):
        found = next((p for p in range(pos, len(calls)) if m(r, p)), None)
        if found is None:
            after = f" after {describe_spec(refs[r - 1])} (event {last})" if r and last is not None else ""
            reason, event = _missing(ref, calls, pos, last, after)
            return False, reason, event
        last, pos = calls[found][0], found + 1
    return True, f"all {len(refs)} reference calls appear in order", None


def _any_order(refs: list[Ref], calls: Calls, m: Callable[[int, int], bool]) -> tuple[bool, str, int | None]:
    matched = max_matching(refs, calls, m)
    for r, ref in enumerate(refs):
        if r not in matched:
            needed = sum(1 for other in refs if other == ref)
            times = f" (needed {needed} times)" if needed > 1 else ""
            reason, event = _missing(ref, calls, 0, None)
            return False, reason + times, event
    return True, f"all {len(refs)} reference calls matched by distinct calls", None


def _subset(refs: list[Ref], calls: Calls, m: Callable[[int, int], bool]) -> tuple[bool, str, int | None]:
    for p, (idx, call, valid) in enumerate(calls):
        if not any(m(r, p) for r in range(len(refs))):
            return (
                False,
                f"unexpected {_show_call(call, valid)} at event {idx}: not in the reference set",
                idx,
            )
    return True, f"all {len(calls)} calls are in the reference set", None


def _superset(refs: list[Ref], calls: Calls, m: Callable[[int, int], bool]) -> tuple[bool, str, int | None]:
    for r, ref in enumerate(refs):
        if not any(m(r, p) for p in range(len(calls))):
            reason, event = _missing(ref, calls, 0, None)
            return False, reason, event
    return True, "every reference call appears at least once", None


MODES = {
    "exact": _exact,
    "in_order": _in_order,
    "any_order": _any_order,
    "subset": _subset,
    "superset": _superset,
}


def _metric(name: str, hits: int, total: int, what: str, details: dict[str, Any]) -> Check:
    if total == 0:
        return Check(
            name=name,
            kind="trajectory",
            status="not_run",
            hard=False,
            reason=f"undefined: no {what}",
            details=details,
        )
    score = hits / total
    return Check(
        name=name,
        kind="trajectory",
        status="pass" if hits == total else "fail",
        hard=False,
        score=score,
        reason=f"{hits} of {total} {what} matched",
        details=details,
    )


def grade_trajectory(ctx: GradeContext) -> list[Check]:
    """The mode check plus precision/recall; [] when the scenario has no ``trajectory``."""
    spec = ctx.scenario.expect.trajectory
    if spec is None:
        return []
    refs: list[Ref] = list(spec.calls)
    calls = agent_calls(ctx.transcript)
    name = f"trajectory:{spec.mode}"
    cache: dict[tuple[int, int], bool] = {}

    def m(r: int, p: int) -> bool:
        if (r, p) not in cache:
            cache[(r, p)] = call_matches(refs[r], calls[p][1], calls[p][2])
        return cache[(r, p)]

    try:
        ok, reason, event = MODES[spec.mode](refs, calls, m)
        matched = max_matching(refs, calls, m)
    except ComparatorError as exc:
        return [Check(name=name, kind="trajectory", status="error", reason=f"argument comparator: {exc}")]
    if not ok and event is None:  # a call that never happened: point at where the agent stopped acting
        event = calls[-1][0] if calls else last_agent_message(ctx.transcript)
    counts = {
        "reference": len(refs),
        "calls": len(calls),
        "invalid": sum(1 for c in calls if not c[2]),
        "matched": len(matched),
    }
    main = Check(
        name=name,
        kind="trajectory",
        status="pass" if ok else "fail",
        reason=reason,
        details={**counts, "reference_calls": [describe_spec(r) for r in refs]},
        **(check_at(ctx.transcript, event) if not ok else {}),
    )
    return unless_tools_unseen(
        ctx,
        [  # an agent service that used none of the served tools: not run
            main,
            _metric("tool_precision", len(matched), len(calls), "agent calls", counts),
            _metric("tool_recall", len(matched), len(refs), "reference calls", counts),
        ],
    )


@grader("trajectory", kind="trajectory")
def trajectory_grader() -> Callable[[GradeContext], list[Check]]:
    """The agent's tool calls against ``expect.trajectory``."""
    return grade_trajectory
