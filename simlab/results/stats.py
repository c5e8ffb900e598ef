"""Estimators and intervals. Pure functions of counts; ``None`` where a figure is undefined.

pass^k = C(c,k)/C(n,k): the chance that k trials drawn without replacement all succeed (the
unbiased estimator of p^k); pass@k = 1 − C(n−c,k)/C(n,k): the chance that at least one does.
Both are undefined (None, never 0) when n < k.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

from simlab.transcript.verdicts import trial_class

Z95 = 1.959963984540054


def pass_hat_k(c: int, n: int, k: int) -> float | None:
    """Unbiased pass^k for one scenario with c successes out of n trials."""
    _check_counts(c, n, k)
    if n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(c: int, n: int, k: int) -> float | None:
    """Unbiased pass@k for one scenario with c successes out of n trials."""
    _check_counts(c, n, k)
    if n < k:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _check_counts(c: int, n: int, k: int) -> None:
    if not (0 <= c <= n) or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1, got c={c}, n={n}, k={k}")


@functools.lru_cache(maxsize=256)
def pass_curve(c: int, n: int, top: int) -> dict[int, tuple[float | None, float | None]]:
    """k → (pass^k, pass@k) for k = 1..top, the very floats of ``pass_hat_k``/``pass_at_k``.

    Those compute C(c,k)/C(n,k) with ``math.comb`` for each k: for a scenario of 10,000 trials
    that is 40,000 binomials of thousands of digits. Here each C(m,k) comes exactly from C(m,k-1)
    (same integers, so the same correctly rounded quotients), and a curve that has reached 0.0
    (pass^k) or 1.0 (pass@k) stays there: the exact ratios only shrink as k grows.
    """
    out: dict[int, tuple[float | None, float | None]] = {}
    cn = cc = cf = 1
    hat: float | None = None
    at: float | None = None
    hat_done = at_done = False
    for k in range(1, top + 1):
        if n < k:
            out[k] = (None, None)
            continue
        cn = cn * (n - k + 1) // k
        if not hat_done:
            cc = cc * (c - k + 1) // k
            hat = cc / cn
            hat_done = hat == 0.0
        if not at_done:
            cf = cf * (n - c - k + 1) // k
            at = 1.0 - cf / cn
            at_done = at == 1.0
        out[k] = (hat, at)
    return out


def mean_defined(values: list[float | None]) -> float | None:
    """Mean over scenarios where the figure is defined; None if none is.

    A suite's pass^k is the mean of the per-scenario values; scenarios with fewer than k trials
    have no value and are left out (the caller reports how many were)."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def wilson(c: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None when n == 0."""
    if n == 0:
        return None
    p = c / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def diff_interval(c1: int, n1: int, c2: int, n2: int, z: float = Z95) -> tuple[float, float, float] | None:
    """Difference p2 − p1 of two independent proportions with its Newcombe (hybrid Wilson) 95% interval.

    Newcombe's method 10 stays inside [−1, 1] and behaves at 0 % and 100 %, where the Wald
    interval collapses to a width of zero. None when either n is 0."""
    a, b = wilson(c1, n1, z), wilson(c2, n2, z)
    if a is None or b is None:
        return None
    p1, p2 = c1 / n1, c2 / n2
    (l1, u1), (l2, u2) = a, b
    d = p2 - p1
    lower = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    upper = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return d, lower, upper


FlakeClass = Literal["stable_pass", "flaky", "stable_fail"]


def flake_class(c: int, n: int) -> FlakeClass | None:
    """All trials passed, all failed, or some of each; None without trials (``verdicts.trial_class``,
    where the classes are defined)."""
    return trial_class(c, n)  # type: ignore[return-value]


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
