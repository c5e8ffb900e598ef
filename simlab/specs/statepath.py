"""The grammar of state paths: ``refunds[order_id=A123].method``, ``orders.A123.total``, ``items[0]``.

Segments joined by dots; each segment is a key, optionally followed by brackets: ``[3]`` (list
index), ``[field=value]`` (the first element of a list — or value of a mapping — whose ``field``
equals ``value``, compared as text). Parsing lives here, below the graders, so that loading a
scenario can check its paths against the domain's state model; ``graders/paths.py`` resolves them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["PathError", "parse_path"]

_SEGMENT = re.compile(r"([^.\[\]]+)?((?:\[[^\]]*\])*)")
_BRACKET = re.compile(r"\[([^\]]*)\]")


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
