"""Gate power: how often a gate fails by noise alone, and how many trials make it trustworthy.

A gate such as ``pass^1 >= 0.8`` over 20 trials is a coin-flip experiment: an agent whose true
success rate is exactly 0.8 scores 15 of 20 or fewer with probability 0.370 (the binomial lower
tail), and fails the build for nothing more than luck. These functions compute that chance
exactly for simlab's own estimators (the gate compares ``pass_hat_k``/``pass_at_k`` of the counts,
or the pooled success rate), under one stated model: every planned trial is valid and independent,
and every scenario has the same true per-trial success rate ``p``. A suite-scope gate on pass^k is
the mean over scenarios, so its distribution is the convolution of each scenario's; a gate with
``scope: each`` fails when any scenario fails it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

__all__ = ["binom_cdf", "binom_pmf", "gate_fail_chance", "power_k", "rate_at", "trials_needed"]

MAX_WORK = 300_000  # (values × outcomes) of one exact convolution; beyond it the figure is None
LOWER_BOUNDS = (">=", ">")


def binom_pmf(n: int, p: float) -> list[float]:
    """P(X = x) for x = 0 … n, X ~ Binomial(n, p); in log space, so large n does not underflow."""
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"need n >= 0 and 0 <= p <= 1, got n={n}, p={p}")
    if p in (0.0, 1.0):
        return [1.0 if x == (n if p == 1.0 else 0) else 0.0 for x in range(n + 1)]
    lp, lq = math.log(p), math.log1p(-p)
    head = math.lgamma(n + 1)
    return [
        math.exp(head - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * lp + (n - x) * lq)
        for x in range(n + 1)
    ]


def binom_cdf(x: int, n: int, p: float) -> float:
    """P(X <= x) for X ~ Binomial(n, p)."""
    if x < 0:
        return 0.0
    return min(1.0, math.fsum(binom_pmf(n, p)[: x + 1]))


Estimator = tuple[int, Callable[[int, int, int], Fraction]]


def power_k(metric: str) -> int | None:
    """The k of a metric gate power is defined for (1 for success, k for pass^k and pass@k with
    k >= 1), or None for any other metric: its power is unknown, not an error."""
    found = _estimator(metric)
    return found[0] if found is not None else None


def _estimator(metric: str) -> Estimator | None:
    """(k, exact estimator(c, n, k)) of a gate metric: success / pass^k / pass@k; None otherwise."""
    if metric == "success":
        return 1, lambda c, n, k: Fraction(c, n)
    k = int(metric[5:]) if metric[5:].isdigit() else 0
    if k < 1:
        return None
    if metric.startswith("pass^"):
        return k, lambda c, n, k: Fraction(math.comb(c, k), math.comb(n, k))
    if metric.startswith("pass@"):
        return k, lambda c, n, k: 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    return None


def _known(metric: str) -> Estimator:
    found = _estimator(metric)
    assert found is not None, metric  # the public functions return None before they get here
    return found


def rate_at(metric: str, value: float) -> float | None:
    """The per-trial success rate p at which the metric's true value is ``value``: p = value for
    success, value^(1/k) for pass^k (p^k), 1 − (1 − value)^(1/k) for pass@k; None for another
    metric."""
    k = power_k(metric)
    if k is None:
        return None
    value = min(max(value, 0.0), 1.0)
    if metric.startswith("pass@"):
        return 1.0 - (1.0 - value) ** (1.0 / k)
    return value ** (1.0 / k)


def _held(value: Fraction, op: str, bound: Fraction) -> bool:
    return value >= bound if op == ">=" else value > bound


def _scenario_dist(metric: str, n: int, p: float) -> dict[Fraction, float]:
    k, estimate = _known(metric)
    dist: dict[Fraction, float] = {}
    for c, prob in enumerate(binom_pmf(n, p)):
        value = estimate(c, n, k)
        dist[value] = dist.get(value, 0.0) + prob
    return dist


def _mean_dist(metric: str, trials: Sequence[int], p: float) -> dict[Fraction, float] | None:
    """The distribution of the mean over scenarios of the metric's estimate (None: too much work)."""
    total: dict[Fraction, float] = {Fraction(0): 1.0}
    for n in trials:
        one = _scenario_dist(metric, n, p)
        if len(total) * len(one) > MAX_WORK:
            return None
        nxt: dict[Fraction, float] = {}
        for a, pa in total.items():
            for b, pb in one.items():
                nxt[a + b] = nxt.get(a + b, 0.0) + pa * pb
        total = nxt
    m = len(trials)
    return {value / m: prob for value, prob in total.items()}


def _need(metric: str, n: int, op: str, bound: Fraction) -> int:
    """The fewest successes of ``n`` trials whose estimate holds the gate (n + 1: none does); the
    estimators grow with the count, so every larger count holds it too."""
    k, estimate = _known(metric)
    low, high = 0, n + 1  # bisection: the answer lies in [low, high]
    while low < high:
        mid = (low + high) // 2
        if _held(estimate(mid, n, k), op, bound):
            high = mid
        else:
            low = mid + 1
    return low


def gate_fail_chance(
    metric: str, op: str, bound: float, trials: Sequence[int], p: float, scope: str = "suite"
) -> float | None:
    """The chance that the gate ``METRIC OP bound`` fails on a run with ``trials[i]`` valid trials
    in scenario i, when every trial succeeds with probability ``p``.

    None when it is not a lower bound on success, pass^k or pass@k, when a scenario has fewer
    than k trials (the gate is then inconclusive, not failed), when ``p`` or ``bound`` is not a
    rate in [0, 1], or when the exact computation is too large (``MAX_WORK``)."""
    k = power_k(metric)
    if op not in LOWER_BOUNDS or not trials or k is None or not (0.0 <= p <= 1.0 and 0.0 <= bound <= 1.0):
        return None
    if any(n < k for n in trials):
        return None
    limit = Fraction(str(bound))
    if scope == "each":  # fails when any scenario fails it
        held = 1.0
        for n, count in Counter(trials).items():
            held *= (1.0 - binom_cdf(_need(metric, n, op, limit) - 1, n, p)) ** count
        return min(1.0, max(0.0, 1.0 - held))
    if metric == "success" or (k == 1 and len(set(trials)) == 1):  # the pooled rate: Binomial(Σn, p)
        total = sum(trials)
        return binom_cdf(_need("success", total, op, limit) - 1, total, p)
    if len(trials) == 1:
        return binom_cdf(_need(metric, trials[0], op, limit) - 1, trials[0], p)
    dist = _mean_dist(metric, trials, p)
    if dist is None:
        return None
    failed = math.fsum(prob for value, prob in dist.items() if not _held(value, op, limit))
    return min(1.0, max(0.0, failed))


def trials_needed(
    metric: str,
    op: str,
    bound: float,
    scenarios: int,
    true_value: float,
    *,
    alpha: float = 0.05,
    scope: str = "suite",
    cap: int = 1000,
) -> int | None:
    """The smallest number of trials per scenario at which an agent whose true metric is
    ``true_value`` (the bound plus the margin it should clear by) fails the gate with chance at
    most ``alpha``. None when no n up to ``cap`` does (or the gate is not a lower bound on
    success, pass^k or pass@k, or ``true_value`` is not a rate in [0, 1]). The
    chance saw-tooths with n (a threshold on counts moves in whole trials), so a larger n can
    still be slightly above ``alpha``; the answer is the first n that is not. Not computed (None)
    for a suite's mean of pass^k or pass@k with k > 1 over several scenarios: each n would need
    a convolution of its own (``gate_fail_chance`` still computes the chance at one n)."""
    k = power_k(metric)
    if op not in LOWER_BOUNDS or scenarios < 1 or k is None or not 0.0 <= true_value <= 1.0:
        return None
    if scope == "suite" and k > 1 and scenarios > 1:
        return None
    p = rate_at(metric, true_value)
    if p is None:
        return None
    for n in range(k, cap + 1):
        chance = gate_fail_chance(metric, op, bound, [n] * scenarios, p, scope)
        if chance is None:
            return None
        if chance <= alpha:
            return n
    return None
