"""Why one invocation's tool calls do not match ADK's expected ones, in one phrase naming the
differing call (the ``adk:tool_trajectory_avg_score`` check's reason); the match itself is
``grader.trajectory_match``."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["call_text", "same_call", "trajectory_difference"]


def call_text(name: Any, args: Any) -> str:
    """``name({sorted JSON arguments})``."""
    return f"{name}({json.dumps(args or {}, sort_keys=True, default=str, ensure_ascii=False)})"


def same_call(actual: tuple[str, Any], expected: dict[str, Any], ignore_args: bool) -> bool:
    return actual[0] == expected.get("name") and (
        ignore_args or (actual[1] or {}) == (expected.get("args") or {})
    )


def _expected(call: dict[str, Any]) -> str:
    return call_text(call.get("name"), call.get("args"))


def _nearest(wanted: dict[str, Any], calls: list[tuple[str, Any]]) -> str:
    same_name = [call_text(*c) for c in calls if c[0] == wanted.get("name")]
    if same_name:
        return f"; the agent called {', '.join(same_name[:3])}"
    return f"; the agent made no call to {wanted.get('name')}"


def _exact(actual: list[tuple[str, Any]], expected: list[dict[str, Any]], ignore: bool) -> str:
    for i, (call, wanted) in enumerate(zip(actual, expected)):
        if not same_call(call, wanted, ignore):
            return f"call {i + 1}: expected {_expected(wanted)}, got {call_text(*call)}"
    counts = f"expected {len(expected)} calls, got {len(actual)}"
    if len(actual) > len(expected):
        return f"{counts}: {call_text(*actual[len(expected)])} is extra"
    return f"{counts}: {_expected(expected[len(actual)])} is missing"


def _in_order(actual: list[tuple[str, Any]], expected: list[dict[str, Any]], ignore: bool) -> str:
    position = 0
    for call in actual:
        if position < len(expected) and same_call(call, expected[position], ignore):
            position += 1
    wanted = expected[position]
    return (
        f"expected call {position + 1} of {len(expected)}, {_expected(wanted)}, was not made in order"
        + _nearest(wanted, actual)
    )


def _any_order(actual: list[tuple[str, Any]], expected: list[dict[str, Any]], ignore: bool) -> str:
    left = list(actual)
    for wanted in expected:
        hit = next((i for i, call in enumerate(left) if same_call(call, wanted, ignore)), None)
        if hit is None:
            return f"expected {_expected(wanted)} was not made" + _nearest(wanted, left)
        left.pop(hit)
    return "the calls match"


def trajectory_difference(
    actual: list[tuple[str, Any]], expected: list[dict[str, Any]], match_type: str, ignore_args: bool = False
) -> str:
    """How ``actual`` fails ``expected`` under ``match_type`` (call it only when it does)."""
    if match_type == "EXACT":
        return _exact(actual, expected, ignore_args)
    if match_type == "IN_ORDER":
        return _in_order(actual, expected, ignore_args)
    return _any_order(actual, expected, ignore_args)
