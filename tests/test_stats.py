"""Estimators and intervals against hand-computed and independently computed values.

Reference intervals were computed with statsmodels 0.14 (proportion_confint(method="wilson") and
confint_proportions_2indep(method="newcomb")); the Newcombe case is the worked example of
Newcombe (1998), 56/70 vs 48/80: 0.0524 to 0.3339.
"""

from __future__ import annotations

import math

import pytest

from simlab.results.stats import (
    diff_interval,
    flake_class,
    mean_defined,
    pass_at_k,
    pass_hat_k,
    percentile,
    wilson,
)


def test_pass_hat_k_by_hand():
    # n=5, c=3: pass^2 = C(3,2)/C(5,2) = 3/10; pass^3 = 1/10; pass^4 = 0 (only 3 successes)
    assert pass_hat_k(3, 5, 1) == pytest.approx(0.6)
    assert pass_hat_k(3, 5, 2) == pytest.approx(0.3)
    assert pass_hat_k(3, 5, 3) == pytest.approx(0.1)
    assert pass_hat_k(3, 5, 4) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0


def test_pass_at_k_by_hand():
    # n=5, c=1: pass@2 = 1 - C(4,2)/C(5,2) = 1 - 6/10 = 0.4
    assert pass_at_k(1, 5, 2) == pytest.approx(0.4)
    assert pass_at_k(0, 5, 3) == 0.0
    assert pass_at_k(4, 5, 2) == 1.0  # C(1,2) = 0


def test_undefined_when_fewer_trials_than_k():
    assert pass_hat_k(2, 2, 3) is None and pass_at_k(2, 2, 3) is None
    with pytest.raises(ValueError):
        pass_hat_k(3, 2, 1)


def test_dataset_aggregation_is_the_mean_of_defined_scenarios():
    # scenario A: 3/4 → pass^2 = C(3,2)/C(4,2) = 3/6; scenario B: 4/4 → 1; scenario C: n=1 → undefined
    values = [pass_hat_k(3, 4, 2), pass_hat_k(4, 4, 2), pass_hat_k(1, 1, 2)]
    assert values[2] is None
    assert mean_defined(values) == pytest.approx((0.5 + 1.0) / 2)
    assert mean_defined([None, None]) is None


@pytest.mark.parametrize("c,n,low,high", [
    (8, 10, 0.49016247153664183, 0.9433178485456247),
    (0, 200, 0.0, 0.01884532637726658),
    (56, 70, 0.6918335550374695, 0.8769526075163705),
    (1, 3, 0.06149194472039626, 0.7923403991979523),
])
def test_wilson_matches_an_independent_implementation(c, n, low, high):
    got = wilson(c, n)
    assert got is not None
    assert got[0] == pytest.approx(low, abs=1e-12) and got[1] == pytest.approx(high, abs=1e-12)
    assert wilson(0, 0) is None


def test_zero_of_200_reads_at_most_1_9_percent():
    assert round(wilson(0, 200)[1] * 100, 1) == 1.9


@pytest.mark.parametrize("c1,n1,c2,n2,low,high", [
    (56, 70, 48, 80, -0.33387265403690614, -0.05243147240236498),
    (8, 10, 5, 10, -0.5998719821481643, 0.10667246527150642),
])
def test_newcombe_difference_interval(c1, n1, c2, n2, low, high):
    d, lo, hi = diff_interval(c1, n1, c2, n2)
    assert d == pytest.approx(c2 / n2 - c1 / n1)
    assert lo == pytest.approx(low, abs=1e-12) and hi == pytest.approx(high, abs=1e-12)
    assert diff_interval(0, 0, 1, 2) is None


def test_flake_class_and_percentile():
    assert [flake_class(3, 3), flake_class(1, 3), flake_class(0, 3), flake_class(0, 0)] == [
        "stable_pass", "flaky", "stable_fail", None]
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([], 50) is None
    assert math.isclose(percentile([10, 20], 95), 19.5)


def test_the_whole_curve_at_once_gives_the_same_floats_as_each_k():
    from simlab.results.stats import pass_curve

    for c, n in [(0, 5), (3, 5), (5, 5), (37, 60), (1, 1)]:
        curve = pass_curve(c, n, n + 2)
        for k in range(1, n + 3):
            assert curve[k] == (pass_hat_k(c, n, k), pass_at_k(c, n, k))
