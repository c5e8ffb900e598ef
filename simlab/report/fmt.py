"""Formatting figures for people, for every surface (terminal, markdown, HTML and JUnit reports,
``simlab compare``, the viewer): percentages, intervals, money, durations, token counts.

Two kinds of missing figure, never shown as 0: ``UNKNOWN`` (the word ``unknown``) for a figure that
exists but nobody knows (a cost without a price, a duration or token count nobody recorded), and
``DASH`` for a figure that is not defined (a rate of no trials, pass^k with fewer than k, a cost
per success without a success)."""

from __future__ import annotations

import re

from simlab.inert import BIDI
from simlab.results.figures import Rate

DASH = "–"
UNKNOWN = "unknown"
IN_ERROR_TRIALS = (
    "in error trials: failures in trials that ended in an infrastructure error (the trial could not "
    "be played, so the check says nothing about the agent)"
)
"""What the failing-checks tables' "in error trials" column means (terminal, markdown, HTML)."""
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]")  # and bidirectional overrides


def safe(text: object) -> str:
    """Text with control characters (ESC, NUL, C1…) and bidirectional overrides replaced: stored
    text stays inert on screens, in markdown, HTML and XML, and reads in the order it was written."""
    return _CONTROLS.sub("\ufffd", str(text))


BARS = "_▁▂▃▄▅▆▇█"


def pct(value: float | None, digits: int = 0) -> str:
    return DASH if value is None else f"{value * 100:.{digits}f}%"


def interval(rate: Rate) -> str:
    """'62% [49–74%]' for a rate of the summary."""
    if rate.rate is None:
        return DASH
    return f"{pct(rate.rate)} [{pct(rate.low)}–{pct(rate.high)}]"


def upper_bound(rate: Rate) -> str:
    """For rare events: '0 of 200 (≤ 1.9%)' — never a bare 0%."""
    if not rate.n:
        return DASH
    if rate.c == 0:
        return f"0 of {rate.n} (≤ {pct(rate.high, 1)})"
    return f"{rate.c} of {rate.n} ({pct(rate.rate, 1)}, ≤ {pct(rate.high, 1)})"


def money(value: float | None) -> str:
    """``$0.0123`` (``$1,234.50`` from a dollar on); ``unknown`` when it is not known (a total is
    known only when every part is: ``results/summary.known_sum``). Every surface says cost this way."""
    if value is None:
        return UNKNOWN
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def per_success(value: float | None, successes: int) -> str:
    """Cost per success: not defined (a dash) without a success, else ``money``."""
    return money(value) if successes else DASH


def seconds(value: float | None, digits: int = 2) -> str:
    """``1.25s``; ``unknown`` when nobody recorded it."""
    return UNKNOWN if value is None else f"{value:.{digits}f}s"


def count(value: float | None) -> str:
    """A count such as tokens: ``12,345``; ``unknown`` when the provider did not say."""
    return UNKNOWN if value is None else f"{value:,.0f}"


def num(value: float | None, digits: int = 2) -> str:
    """A rate or ratio: ``0.62``; a dash when it is not defined."""
    return DASH if value is None else f"{value:.{digits}f}"


def change(difference: float | None, low: float | None, high: float | None) -> str:
    """A change between two runs with its interval: ``+12% [-3%, +27%]``; a dash when not defined."""
    if difference is None or low is None or high is None:
        return DASH
    return f"{difference:+.0%} [{low:+.0%}, {high:+.0%}]"


CURVE_WIDTH = 16  # characters of the curve column, whatever the number of trials


def resample(values: list[float | None], width: int = CURVE_WIDTH) -> list[float | None]:
    """At most ``width`` of ``values``, evenly spaced, the first and the last always kept: a curve
    of 100 points fits a column of 16."""
    if len(values) <= width or width < 2:
        return values[: max(width, 1)] if width < 2 else values
    return [values[round(i * (len(values) - 1) / (width - 1))] for i in range(width)]


def curve(values: list[float | None], width: int = CURVE_WIDTH) -> str:
    """pass^k for k = 1, 2, … as a row of bars, resampled to ``width`` characters; '·' where
    undefined (n < k)."""
    return "".join("·" if v is None else BARS[round(v * (len(BARS) - 1))] for v in resample(values, width))


def shown_ks(max_k: int) -> list[int]:
    """Which k get their own column: a few small ones, then the largest."""
    return [k for k in (1, 2, 3, 5, 8, 16, 32) if k < max_k][:4] + [max(1, max_k)]
