"""Formatting figures for people: percentages, intervals, money; unknown shows as a dash."""

from __future__ import annotations

import re

from simlab.results.figures import Rate

DASH = "–"
IN_ERROR_TRIALS = ("in error trials: failures in trials that ended in an infrastructure error (the trial could not "
                   "be played, so the check says nothing about the agent)")
"""What the failing-checks tables' "in error trials" column means (terminal, markdown, HTML)."""
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """Text with control characters (ESC, NUL, C1…) replaced: stored text stays inert on screens,
    in markdown and in XML."""
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


def money(value: float | None, complete: bool = True) -> str:
    """``$0.0123`` (``$1,234.50`` from a dollar on); ``unknown`` when nothing is known; ``≥$0.01``
    when ``complete`` is False (some part of it is unknown). Every surface says cost this way."""
    if value is None:
        return "unknown"
    text = f"${value:.4f}" if value < 1 else f"${value:,.2f}"
    return text if complete else f"≥{text}"


def num(value: float | None, digits: int = 2) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


CURVE_WIDTH = 16  # characters of the curve column, whatever the number of trials


def resample(values: list[float | None], width: int = CURVE_WIDTH) -> list[float | None]:
    """At most ``width`` of ``values``, evenly spaced, the first and the last always kept: a curve
    of 100 points fits a column of 16."""
    if len(values) <= width or width < 2:
        return values[:max(width, 1)] if width < 2 else values
    return [values[round(i * (len(values) - 1) / (width - 1))] for i in range(width)]


def curve(values: list[float | None], width: int = CURVE_WIDTH) -> str:
    """pass^k for k = 1, 2, … as a row of bars, resampled to ``width`` characters; '·' where
    undefined (n < k)."""
    return "".join("·" if v is None else BARS[round(v * (len(BARS) - 1))] for v in resample(values, width))


def shown_ks(max_k: int) -> list[int]:
    """Which k get their own column: a few small ones, then the largest."""
    return [k for k in (1, 2, 3, 5, 8, 16, 32) if k < max_k][:4] + [max(1, max_k)]
