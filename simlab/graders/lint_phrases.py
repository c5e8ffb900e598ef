"""What a scenario's phrases (regular expressions) require of a reply, for ``simlab lint``.

Read from the pattern's parse tree (Python's own ``re`` parser): the literal text every match
contains (``required_text``), and a shortest reply that matches (``example``). Both are best
effort: a construct they do not follow gives less (no text, no example), never a wrong claim;
an example is returned only once the pattern was seen to match it.
"""

from __future__ import annotations

import re

# Python 3.11+: re's own parser (sre_parse is its deprecated alias)
from re import _parser as sre  # type: ignore[attr-defined]
from typing import Any

__all__ = ["example", "matches_anything", "required_text"]

LONGEST = 2000  # characters of an example reply; a pattern that needs more gets none


def _parse(pattern: str) -> Any:
    try:
        return sre.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, ValueError):
        return None


def matches_anything(pattern: str) -> bool:
    """Whether the pattern matches an empty reply (so any reply at all)."""
    try:
        return re.search(pattern, "", re.IGNORECASE) is not None
    except re.error:
        return False


def required_text(pattern: str) -> list[str]:
    """The literal runs every match of ``pattern`` contains (alternatives and optional parts
    left out)."""
    tree = _parse(pattern)
    if tree is None:
        return []
    runs: list[str] = []
    current: list[str] = []
    try:
        _required(list(tree), runs, current)
    except RecursionError:
        return []
    if current:
        runs.append("".join(current))
    return [r for r in runs if r.strip()]


def _required(items: list[Any], runs: list[str], current: list[str]) -> None:
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            current.append(chr(av))
            continue
        if name == "SUBPATTERN":
            _required(list(av[-1]), runs, current)
            continue
        if name in ("MAX_REPEAT", "MIN_REPEAT") and av[0] >= 1:
            _flush(runs, current)
            _required(list(av[2]), runs, current)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        _flush(runs, current)


def _flush(runs: list[str], current: list[str]) -> None:
    if current:
        runs.append("".join(current))
        current.clear()


def example(pattern: str) -> str | None:
    """A short reply that ``pattern`` matches, or None when none could be made."""
    tree = _parse(pattern)
    if tree is None:
        return None
    groups: dict[int, str] = {}
    try:
        text = _make(list(tree), groups)
    except (_Unsupported, RecursionError):
        return None
    if len(text) > LONGEST:
        return None
    try:
        return text if re.search(pattern, text, re.IGNORECASE) else None
    except re.error:
        return None


class _Unsupported(Exception):
    pass


_PICKS = "xa0 "  # characters tried for a class or a negated literal


def _make(items: list[Any], groups: dict[int, str]) -> str:
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append(next(c for c in _PICKS if ord(c) != av))
        elif name == "ANY":
            out.append("x")
        elif name == "IN":
            out.append(_pick(av))
        elif name == "BRANCH":
            out.append(_make(list(av[1][0]), groups))
        elif name == "SUBPATTERN":
            text = _make(list(av[-1]), groups)
            if av[0] is not None:
                groups[av[0]] = text
            out.append(text)
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            piece = _make(list(av[2]), groups)
            if len(piece) * av[0] > LONGEST:
                raise _Unsupported("a reply longer than any example worth making")
            out.append(piece * av[0])
        elif name == "GROUPREF":
            out.append(groups.get(av, ""))
        elif name not in ("AT", "ASSERT", "ASSERT_NOT"):
            raise _Unsupported(name)
    return "".join(out)


def _pick(av: list[Any]) -> str:
    """A character of a ``[...]`` class (checked by the caller's final match)."""
    pattern = "[" + "".join(_class_part(op, arg) for op, arg in av) + "]"
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise _Unsupported("IN") from exc
    for c in "xa0 -.@_Z9" + "".join(chr(i) for i in range(33, 127)):
        if rx.fullmatch(c):
            return c
    raise _Unsupported("IN")


def _class_part(op: Any, arg: Any) -> str:
    name = str(op)
    if name == "NEGATE":
        return "^"
    if name == "LITERAL":
        return re.escape(chr(arg))
    if name == "RANGE":
        return f"{re.escape(chr(arg[0]))}-{re.escape(chr(arg[1]))}"
    if name == "CATEGORY":
        return {
            "CATEGORY_DIGIT": r"\d",
            "CATEGORY_NOT_DIGIT": r"\D",
            "CATEGORY_SPACE": r"\s",
            "CATEGORY_NOT_SPACE": r"\S",
            "CATEGORY_WORD": r"\w",
            "CATEGORY_NOT_WORD": r"\W",
        }.get(str(arg), "")
    raise _Unsupported(name)
