"""seatrial.stats.effects alone, on synthetic data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seatrial.stats.effects import pooled_effect, spread, starts_needed, welch_log, within_sd


def test_exact_values_give_the_exact_gain_in_both_directions() -> None:
    up = welch_log([100, 100, 100], [110, 110, 110], higher_is_better=True)
    assert up.gain_pct == pytest.approx(10.0) and up.ci_pct == pytest.approx((10.0, 10.0))
    # a latency that dropped from 110 to 100 ms is a 10% gain too
    down = welch_log([110, 110], [100, 100], higher_is_better=False)
    assert down.gain_pct == pytest.approx(10.0)
    worse = welch_log([100, 101], [120, 121], higher_is_better=False)
    assert (
        worse.gain_pct is not None
        and worse.gain_pct < -15
        and worse.ci_pct[1] is not None
        and worse.ci_pct[1] < 0
    )


def test_one_start_has_no_interval() -> None:
    e = welch_log([100.0], [120.0, 121.0], True)
    assert e.gain_pct is not None and e.ci_pct == (None, None)


@pytest.mark.parametrize(("n", "cv"), [(3, 0.05), (5, 0.10)])
def test_welch_interval_covers_the_true_ratio(n: int, cv: float) -> None:
    rng = np.random.default_rng(7)
    sigma = math.sqrt(math.log(1 + cv**2))
    hits, trials = 0, 1500
    for _ in range(trials):
        a = 1000 * rng.lognormal(0, sigma, n)
        b = 1100 * rng.lognormal(0, sigma, n)  # true gain 10%
        lo, hi = welch_log(a, b, True).ci_pct
        hits += lo is not None and hi is not None and lo <= 10.0 <= hi
    assert 0.93 <= hits / trials <= 0.975


def test_pooled_effect_reads_the_pooled_percentile_with_start_spread_in_the_interval() -> None:
    rng = np.random.default_rng(3)
    a = [rng.exponential(100, 300) for _ in range(3)]
    b = [rng.exponential(50, 300) for _ in range(3)]  # half the latency: gain +100%
    e = pooled_effect(a, b, "p99", higher_is_better=False)
    assert e.gain_pct is not None and e.method == "bootstrap-2level"
    lo, hi = e.ci_pct
    assert lo is not None and hi is not None and lo < e.gain_pct < hi and lo <= 100 <= hi and lo > 0
    same = pooled_effect(a, [rng.exponential(100, 300) for _ in range(3)], "p50", higher_is_better=False)
    assert same.ci_pct[0] is not None and same.ci_pct[0] < 0 < (same.ci_pct[1] or 0)


def test_starts_needed_grows_as_the_effect_nears_the_threshold() -> None:
    far = starts_needed(30.0, 5.0, sd_log=0.05)
    near = starts_needed(8.0, 5.0, sd_log=0.05)
    assert far is not None and near is not None and 2 <= far < near
    assert starts_needed(5.0, 5.0, 0.05) is None and starts_needed(20.0, 5.0, 0.0) == 2
    assert starts_needed(None, 5.0, 0.05) is None


def test_spread_and_within_start_sd() -> None:
    s = spread([90.0, 100.0, 110.0])
    assert s["mean"] == 100.0 and s["sd"] == pytest.approx(10.0) and s["cv"] == pytest.approx(0.1)
    assert spread([5.0])["sd"] is None and spread([])["n"] == 0
    assert within_sd([[1.0, 3.0], [10.0, 12.0]]) == pytest.approx(math.sqrt(2.0))
