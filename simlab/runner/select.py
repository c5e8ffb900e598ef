"""Which scenarios a run plays: ``-k EXPR`` (pytest's habit) and ``--tags``.

``-k`` takes words joined by ``and``, ``or``, ``not`` and parentheses; a word matches a scenario
whose id, title or one of its tags contains it (any case): ``-k "refund and not card"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from simlab.errors import UsageError

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
Matcher = Callable[[str], bool]


def keyword_filter(expression: str) -> Callable[[Iterable[str]], bool]:
    """A predicate over a scenario's words (id, title, tags) for ``-k EXPR``; ``UsageError`` when
    the expression does not parse."""
    tokens = [m.group(1) for m in _TOKEN.finditer(expression)]
    if not tokens:
        raise UsageError("-k: the expression is empty")
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise UsageError(f"-k {expression!r}: the expression ends too early")
        pos += 1
        return tokens[pos - 1]

    def either() -> Matcher:
        parts = [both()]
        while peek() == "or":
            take()
            parts.append(both())
        return parts[0] if len(parts) == 1 else (lambda text: any(part(text) for part in parts))

    def both() -> Matcher:
        parts = [negation()]
        while peek() == "and":
            take()
            parts.append(negation())
        return parts[0] if len(parts) == 1 else (lambda text: all(part(text) for part in parts))

    def negation() -> Matcher:
        if peek() == "not":
            take()
            inner = negation()
            return lambda text: not inner(text)
        return atom()

    def atom() -> Matcher:
        token = take()
        if token == "(":
            inner = either()
            if take() != ")":
                raise UsageError(f"-k {expression!r}: a parenthesis is not closed")
            return inner
        if token in (")", "and", "or"):
            raise UsageError(f"-k {expression!r}: unexpected {token!r}")
        word = token.casefold()
        return lambda text: word in text

    matcher = either()
    if pos != len(tokens):
        raise UsageError(f"-k {expression!r}: unexpected {tokens[pos]!r}")
    return lambda words: matcher(" ".join(words).casefold())
