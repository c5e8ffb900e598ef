"""The one count of a trial's tool calls, invalid calls and tool errors.

Why one function: the results row, the stored head, the efficiency check and the viewer all show
these numbers, and they must agree. An invalid call (unknown tool, arguments that are not JSON or
fail the schema) never ran: the agent is shown an error result for it, but it is counted once, as
invalid, and not again as a tool error. A tool error is a failed result of a call that ran (the
tool refused, crashed, timed out, or returned something that cannot be recorded).

It reads events as the models (``ToolCall``…) or as their raw JSON dicts, so the report's fast path
over stored lines and the graders share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["tool_counts"]


def _get(event: Any, key: str) -> Any:
    return event.get(key) if isinstance(event, dict) else getattr(event, key, None)


def tool_counts(events: Iterable[Any]) -> dict[str, int]:
    """``{"tool_calls": …, "invalid_calls": …, "tool_errors": …}`` of a trial's events."""
    calls = 0
    invalid: set[Any] = set()
    failed: list[Any] = []
    for event in events:
        kind = _get(event, "type")
        if kind == "tool_call":
            calls += 1
        elif kind == "invalid_call":
            invalid.add(_get(event, "call_id"))
        elif kind == "tool_result" and not _get(event, "ok"):
            failed.append(_get(event, "call_id"))
    return {
        "tool_calls": calls,
        "invalid_calls": len(invalid),
        "tool_errors": sum(1 for call_id in failed if call_id not in invalid),
    }
