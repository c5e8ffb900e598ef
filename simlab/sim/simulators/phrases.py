"""Scenario phrases (regular expressions) matched against what the agent said, in time linear in
its length.

Python's ``re`` backtracks: ``refund of .*(issued|processed)`` against a 100 KB reply that says
"refund of" many times tries every start and runs to the end from each, quadratic (32 s for one
trial at 117 KB). RE2 (``google-re2``) never backtracks: linear, whatever the pattern and the
reply. A pattern RE2 cannot run (look-around, back-references) falls back to Python's engine.
Matching ignores case, as it always has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["engine", "first_match"]


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Any:
    try:
        import re2

        options = re2.Options()
        options.case_sensitive = False
        options.log_errors = False
        return re2.compile(pattern, options)
    except Exception:  # RE2 cannot run it (or is not installed): the backtracking engine
        return re.compile(pattern, re.IGNORECASE)


def engine(pattern: str) -> str:
    """``re2`` (linear time) or ``re`` (the fallback) for ``pattern``."""
    return "re" if isinstance(_compiled(pattern), re.Pattern) else "re2"


def first_match(patterns: Iterable[str], text: str) -> str | None:
    """The text matched by the first pattern that matches ``text`` anywhere, or None."""
    for pattern in patterns:
        match = _compiled(pattern).search(text)
        if match:
            return str(match.group(0))
    return None
