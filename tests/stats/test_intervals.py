"""seatrial.stats alone: percentile intervals (order statistics), bootstrap, minimum samples, paired
differences, direction consistency."""

from __future__ import annotations

import numpy as np
import pytest

from seatrial.stats import (
    bootstrap,
    direction_consistency,
    median_ci,
    min_samples,
    percentile_ci,
    quantile_ranks,
    relative_differences_pct,
)


def test_min_samples_put_ten_observations_beyond_the_percentile() -> None:
    assert (min_samples(50), min_samples(90), min_samples(95), min_samples(99)) == (20, 100, 200, 1000)
    assert min_samples(10) == 100  # ten below a low percentile
    with pytest.raises(ValueError):
        min_samples(100)


def test_order_statistic_ranks_are_the_textbook_ones() -> None:
    assert quantile_ranks(20, 50) == (6, 15)  # the median of 20: x(6)..x(15), 95.9%
    assert quantile_ranks(100, 99) == (97, None)  # p99 of 100 samples has no upper bound
    assert quantile_ranks(5, 50) == (None, None)
    low, high = quantile_ranks(1000, 99)
    assert low is not None and high is not None and low < 990 < high <= 1000


@pytest.mark.parametrize(("n", "q"), [(30, 50), (200, 90), (2000, 99)])
def test_percentile_interval_covers_the_true_value_95_percent_of_the_time(n: int, q: float) -> None:
    rng = np.random.default_rng(11)
    true = -np.log(1 - q / 100)  # exponential(1)
    trials = 600
    hits = 0
    for _ in range(trials):
        est = percentile_ci(rng.exponential(1.0, n), q)
        hits += est.ci_low is not None and est.ci_high is not None and est.ci_low <= true <= est.ci_high
    assert 0.93 <= hits / trials <= 0.99


def test_percentile_ci_contains_the_true_value_and_narrows_with_n() -> None:
    rng = np.random.default_rng(1)
    true_p90 = float(np.log(10))  # exponential(1): P(X > x) = e^-x
    small = percentile_ci(list(rng.exponential(1.0, 100)), 90)
    large = percentile_ci(list(rng.exponential(1.0, 1000)), 90)
    for est in (small, large):
        assert est.ci_low is not None and est.ci_high is not None
        assert est.ci_low <= true_p90 <= est.ci_high
    assert (large.ci_high - large.ci_low) < (small.ci_high - small.ci_low) / 2  # type: ignore[operator]
    assert small.enough and large.n == 1000


def test_p99_of_few_samples_is_not_enough() -> None:
    est = percentile_ci([float(i) for i in range(50)], 99)
    assert est.value == pytest.approx(48.51) and not est.enough and est.n == 50


def test_empty_and_constant_samples() -> None:
    empty = median_ci([])
    assert empty.value is None and not empty.enough and empty.n == 0
    flat = median_ci([5.0] * 10)
    assert (flat.value, flat.ci_low, flat.ci_high) == (5.0, 5.0, 5.0)
    assert flat.above(4.9) and not flat.above(5.0) and flat.below(5.1)


def test_bootstrap_is_reproducible_for_a_seed() -> None:
    values = [float(v) for v in np.random.default_rng(3).normal(10, 2, 30)]
    mean = lambda m: m.mean(axis=1)  # noqa: E731
    assert bootstrap(values, mean, 10, seed=7) == bootstrap(values, mean, 10, seed=7)
    assert bootstrap(values, mean, 10, seed=7) != bootstrap(values, mean, 10, seed=8)


def test_paired_relative_differences() -> None:
    assert relative_differences_pct([100.0, 50.0], [110.0, 25.0]) == [10.0, -50.0]
    with pytest.raises(ValueError):
        relative_differences_pct([1.0], [1.0, 2.0])


def test_direction_consistency_of_seed_004_rounds() -> None:
    # seed 004 §10: -2%, +11%, -1%, +12% -- the median (+5%) hides a direction that flips
    assert direction_consistency([-2.0, 11.0, -1.0, 12.0]) == 0.5
    assert direction_consistency([3.0, 4.0, 5.0, -1.0]) == 0.75
    assert direction_consistency([0.0, 0.0]) is None
