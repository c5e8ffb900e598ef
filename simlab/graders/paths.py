"""Paths into a state snapshot: ``refunds[order_id=A123].method``, ``orders.A123.total``, ``items[0]``.

Grammar: segments joined by dots; each segment is a key, optionally followed by brackets:
``[3]`` (list index), ``[field=value]`` (the first element of a list — or value of a mapping —
whose ``field`` equals ``value``, compared as text). ``{name}`` placeholders are filled from a
mapping before parsing (used by rules that look up a call's arguments).
"""

from __future__ import annotations

from typing import Any

from simlab.specs.statepath import PathError, parse_path

__all__ = ["MISSING", "PathError", "parse_path", "resolve"]

MISSING = object()


def resolve(data: Any, path: str, args: dict[str, Any] | None = None) -> Any:
    """The value at ``path``, or ``MISSING``."""
    if args:
        path = path.format_map(_Strict(args))
    current = data
    for step in parse_path(path):
        if isinstance(step, tuple):
            field, wanted = step
            items = (
                current.values()
                if isinstance(current, dict)
                else current
                if isinstance(current, list)
                else []
            )
            current = next(
                (i for i in items if isinstance(i, dict) and _text(i.get(field, MISSING)) == wanted), MISSING
            )
        elif isinstance(step, int):
            current = (
                current[step]
                if isinstance(current, list) and -len(current) <= step < len(current)
                else MISSING
            )
        else:
            current = current.get(step, MISSING) if isinstance(current, dict) else MISSING
        if current is MISSING:
            return MISSING
    return current


def _text(value: Any) -> str:
    if value is MISSING:
        return "\x00missing"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


class _Strict(dict):
    def __missing__(self, key: str) -> str:
        raise PathError(f"placeholder {{{key}}} has no value")
