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
    matcher = _Parser(expression).parse()
    return lambda words: matcher(" ".join(words).casefold())


class _Parser:
    """Recursive descent over ``-k``'s tokens: or < and < not < a word or a parenthesis."""

    def __init__(self, expression: str):
        self.expression = expression
        self.tokens = [m.group(1) for m in _TOKEN.finditer(expression)]
        self.pos = 0
        if not self.tokens:
            raise UsageError("-k: the expression is empty")

    def parse(self) -> Matcher:
        matcher = self.either()
        if self.pos != len(self.tokens):
            raise UsageError(f"-k {self.expression!r}: unexpected {self.tokens[self.pos]!r}")
        return matcher

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        if self.pos >= len(self.tokens):
            raise UsageError(f"-k {self.expression!r}: the expression ends too early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def either(self) -> Matcher:
        parts = [self.both()]
        while self.peek() == "or":
            self.take()
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else (lambda text: any(part(text) for part in parts))

    def both(self) -> Matcher:
        parts = [self.negation()]
        while self.peek() == "and":
            self.take()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else (lambda text: all(part(text) for part in parts))

    def negation(self) -> Matcher:
        if self.peek() == "not":
            self.take()
            inner = self.negation()
            return lambda text: not inner(text)
        return self.atom()

    def atom(self) -> Matcher:
        token = self.take()
        if token == "(":
            inner = self.either()
            if self.take() != ")":
                raise UsageError(f"-k {self.expression!r}: a parenthesis is not closed")
            return inner
        if token in (")", "and", "or"):
            raise UsageError(f"-k {self.expression!r}: unexpected {token!r}")
        word = token.casefold()
        return lambda text: word in text
