"""Paths into a state snapshot: ``refunds[order_id=A123].method``, ``orders.A123.total``, ``items[0]``.

Grammar: segments joined by dots; each segment is a key, optionally followed by brackets:
``[3]`` (list index), ``[field=value]`` (the first element of a list — or value of a mapping —
whose ``field`` equals ``value``, compared as text). ``{name}`` placeholders are filled from a
mapping before parsing (used by rules that look up a call's arguments).
"""

from __future__ import annotations

import functools
import re
from typing import Any

_SEGMENT = re.compile(r"([^.\[\]]+)?((?:\[[^\]]*\])*)")
_BRACKET = re.compile(r"\[([^\]]*)\]")
MISSING = object()


class PathError(ValueError):
    """The path text itself is malformed."""


def parse_path(path: str) -> list[Any]:
    """Steps: a ``str`` key, an ``int`` index, or a ``(field, value)`` filter."""
    return list(_parsed(path))


@functools.lru_cache(maxsize=4096)
def _parsed(path: str) -> tuple[Any, ...]:
    """Cached: every trial of a scenario resolves the same paths (errors are not cached)."""
    steps: list[Any] = []
    for part in _split(path):
        match = _SEGMENT.fullmatch(part)
        if not match or (not match.group(1) and not match.group(2)):
            raise PathError(f"bad path segment {part!r} in {path!r}")
        if match.group(1):
            steps.append(match.group(1).strip())
        for inner in _BRACKET.findall(match.group(2) or ""):
            inner = inner.strip()
            if "=" in inner:
                field, value = inner.split("=", 1)
                steps.append((field.strip(), value.strip().strip("'\"")))
            elif re.fullmatch(r"-?\d+", inner):
                steps.append(int(inner))
            else:
                raise PathError(f"bad bracket [{inner}] in {path!r}: use [index] or [field=value]")
    return tuple(steps)


def _split(path: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in path:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    if any(not p for p in parts):
        raise PathError(f"empty segment in path {path!r}")
    return parts


def resolve(data: Any, path: str, args: dict[str, Any] | None = None) -> Any:
    """The value at ``path``, or ``MISSING``."""
    if args:
        path = path.format_map(_Strict(args))
    current = data
    for step in parse_path(path):
        if isinstance(step, tuple):
            field, wanted = step
            items = current.values() if isinstance(current, dict) else current if isinstance(current, list) else []
            current = next((i for i in items if isinstance(i, dict) and _text(i.get(field, MISSING)) == wanted),
                           MISSING)
        elif isinstance(step, int):
            current = current[step] if isinstance(current, list) and -len(current) <= step < len(current) else MISSING
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


class _Strict(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        raise PathError(f"placeholder {{{key}}} has no value")
