"""seatrial.stats.effects alone, on synthetic data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from seatrial.stats import min_samples, tail_count
from seatrial.stats.effects import (
    RESOLUTION_LOG,
    common_slope,
    holm_levels,
    power_starts,
    spread,
    statistic,
    welch_log,
    within_run,
    within_sd,
)


def test_gain_is_the_ratio_of_geometric_means_in_both_directions() -> None:
    up = welch_log([100, 101, 99], [110, 111, 109], higher_is_better=True)
    gm = lambda xs: math.exp(np.mean(np.log(xs)))  # noqa: E731
    assert up.gain_pct == pytest.approx((gm([110, 111, 109]) / gm([100, 101, 99]) - 1) * 100)
    assert up.method == "welch-log-per-start" and up.ci_pct[0] is not None and up.ci_pct[0] > 5
    # a latency that dropped from 110 to 100 ms is a 10% gain
    down = welch_log([110, 111], [100, 101], higher_is_better=False)
    assert down.gain_pct == pytest.approx((math.sqrt(110 * 111) / math.sqrt(100 * 101) - 1) * 100)
    worse = welch_log([100, 101], [120, 121], higher_is_better=False)
    assert worse.gain_pct is not None and worse.gain_pct < -15 and (worse.ci_pct[1] or 0) < 0


def test_welch_matches_scipy() -> None:
    a, b = [980.0, 1010.0, 1003.0, 995.0], [1090.0, 1071.0, 1102.0]
    e = welch_log(a, b, True, confidence=0.95)
    res = sps.ttest_ind(np.log(b), np.log(a), equal_var=False)
    lo, hi = res.confidence_interval(0.95)
    assert e.ci_pct == pytest.approx((math.expm1(lo) * 100, math.expm1(hi) * 100), rel=1e-9)
    assert e.df == pytest.approx(res.df)


def test_zero_or_near_zero_spread_has_no_interval() -> None:
    flat = welch_log([1000, 1000], [1100, 1100], True)
    assert flat.gain_pct == pytest.approx(10.0) and flat.ci_pct == (None, None) and not flat.resolved
    close = welch_log([1000, 1000 * (1 + RESOLUTION_LOG / 10)], [1100, 1100], True)
    assert close.ci_pct == (None, None) and not close.resolved
    real = welch_log([1000, 1003], [1100, 1104], True)
    assert real.resolved and real.ci_pct[0] is not None


def test_one_start_has_no_interval() -> None:
    e = welch_log([100.0], [120.0, 121.0], True)
    assert e.gain_pct is not None and e.ci_pct == (None, None) and not e.has_interval


@pytest.mark.parametrize(("n", "cv"), [(2, 0.05), (3, 0.05), (5, 0.10)])
def test_welch_interval_covers_the_true_ratio(n: int, cv: float) -> None:
    rng = np.random.default_rng(7)
    sigma = math.sqrt(math.log(1 + cv**2))
    a = 1000 * rng.lognormal(0, sigma, (3000, n))
    b = 1100 * rng.lognormal(0, sigma, (3000, n))  # true gain 10%
    hits = 0
    for x, y in zip(a, b, strict=True):
        lo, hi = welch_log(x, y, True).ci_pct
        hits += lo is not None and hi is not None and lo <= 10.0 <= hi
    assert 0.93 <= hits / len(a) <= 0.99  # Welch with 2 a side is conservative (about 98%)


def test_per_start_percentiles_with_a_start_effect_are_covered() -> None:
    """The issue's case: p99 of each start's 300 lognormal requests, a per-start random effect of SD
    0.10, 3 starts a side: the interval on the per-start p99s covers the true ratio (the two-level
    bootstrap it replaces covered 85%)."""
    rng = np.random.default_rng(11)
    trials, n, requests = 1500, 3, 300
    hits = 0
    for _ in range(trials):
        sides = []
        for scale in (1.0, 1 / 1.1):  # B's latency 1/1.1 of A's: gain +10%
            effects = rng.normal(0, 0.10, n)
            sides.append(
                [statistic(scale * np.exp(e) * rng.lognormal(0, 0.5, requests), "p99") for e in effects]
            )
        lo, hi = welch_log(sides[0], sides[1], higher_is_better=False).ci_pct
        hits += lo is not None and hi is not None and lo <= 10.0 <= hi
    assert 0.93 <= hits / trials <= 0.98


def test_p_beyond_and_interval_agree() -> None:
    e = welch_log([100, 102, 98, 101], [112, 115, 110, 113], True)
    assert e.p_beyond(5.0) is not None
    for conf in (0.9, 0.95, 0.99):
        lo, _ = e.interval(conf)
        # the claim "gain above +5%" passes at level (1-conf)/2 exactly when the interval clears 5%
        assert (lo is not None and lo > 5.0) == ((e.p_beyond(5.0) or 1.0) < (1 - conf) / 2)


def test_holm_steps_down_and_stops_at_the_first_failure() -> None:
    levels = holm_levels([0.001, None, 0.02, 0.004], alpha=0.025)
    # ranks: 0.001 (1st of 3: alpha/3), 0.004 (2nd: alpha/2), 0.02 (3rd: alpha/1)
    assert levels[0] == pytest.approx(0.025 / 3) and levels[3] == pytest.approx(0.025 / 2)
    assert levels[2] == pytest.approx(0.025) and levels[1] is None
    stopped = holm_levels([0.001, 0.02, 0.021], alpha=0.025)
    # 0.02 fails at alpha/2: the last one is tested at that level too, never at alpha
    assert stopped[1] == pytest.approx(0.0125) and stopped[2] == pytest.approx(0.0125)


def test_rough_plan_grows_with_the_sd_and_its_uncertainty() -> None:
    n_small, upper = power_starts(5.0, 0.02, df=4)
    n_large, _ = power_starts(5.0, 0.06, df=4)
    n_sure, upper_sure = power_starts(5.0, 0.06, df=40)
    assert n_small is not None and n_large is not None and n_sure is not None
    assert 2 <= n_small < n_sure < n_large
    assert upper is not None and upper > 0.02 and upper_sure is not None and upper_sure < 0.06 * 1.5
    assert power_starts(5.0, None, 4) == (None, None) and power_starts(5.0, 0.06, 0) == (None, None)
    # at the plan's n, a true gain of 0 falls inside +-5% with at least the stated power (by simulation)
    rng = np.random.default_rng(5)
    sd = 0.04
    n, _ = power_starts(5.0, sd, df=10_000)  # SD known: the upper bound is the SD itself
    assert n is not None
    inside = 0
    for _ in range(1000):
        lo, hi = welch_log(rng.lognormal(0, sd, n), rng.lognormal(0, sd, n), True).ci_pct
        inside += lo is not None and hi is not None and lo > -5.0 and hi < 5.0
    assert inside / 1000 >= 0.78


def test_common_slope_recovers_a_drift_shared_by_settings() -> None:
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(500):
        groups = []
        for level, slots in ((0.0, [0, 3, 4, 7]), (0.2, [1, 2, 5, 6])):
            x = np.asarray(slots, float)
            groups.append((x, level + 0.01 * x + rng.normal(0, 0.02, len(x))))
        sl = common_slope(groups)
        assert sl is not None and sl.df == 8 - 2 - 1
        hits += sl.ci[0] <= 0.01 <= sl.ci[1]
    assert 0.92 <= hits / 500 <= 0.98
    assert common_slope([([0.0, 1.0], [1.0, 2.0])]) is None  # no residual degree of freedom


def test_within_run_resamples_requests_with_their_gaps() -> None:
    """ITL of one run per side: requests differ in speed (SD 0.15), their gaps move together. Resampled
    one gap at a time the interval covered 44%; whole requests cover the run-to-run truth."""
    rng = np.random.default_rng(4)
    hits, gapwise, trials = 0, 0, 200
    for _ in range(trials):
        runs = [
            [list(scale * rng.lognormal(0, 0.15) * rng.lognormal(0, 0.1, 16)) for _ in range(60)]
            for scale in (1.0, 1 / 1.1)
        ]
        e = within_run(runs[0], runs[1], "p99", higher_is_better=False, n_boot=500)
        lo, hi = e.ci_pct
        hits += lo is not None and hi is not None and lo <= 10.0 <= hi
        # the same gaps, each its own "request": what flattening the lists did
        gaps = [[[x] for r in run for x in r] for run in runs]
        lo, hi = within_run(gaps[0], gaps[1], "p99", higher_is_better=False, n_boot=500).ci_pct
        gapwise += lo is not None and hi is not None and lo <= 10.0 <= hi
    assert e.method == "bootstrap-requests-within-run"
    assert hits / trials >= 0.88 and gapwise / trials < 0.8, (hits / trials, gapwise / trials)


def test_samples_beyond_a_percentile() -> None:
    assert tail_count(1000, 99) == 10 and tail_count(64, 99) == 0 and tail_count(40, 50) == 20
    assert min_samples(99) == 1000 and tail_count(min_samples(90), 90) == 10


def test_spread_and_within_start_sd() -> None:
    s = spread([90.0, 100.0, 110.0])
    assert s["geomean"] == pytest.approx((90 * 100 * 110) ** (1 / 3))
    assert s["sd_log"] == pytest.approx(float(np.std(np.log([90, 100, 110]), ddof=1)))
    assert spread([5.0])["sd_log"] is None and spread([])["n"] == 0
    assert within_sd([[1.0, 3.0], [10.0, 12.0]]) == pytest.approx(math.sqrt(2.0))
    assert statistic([], "p50") is None and statistic([1.0, 3.0], "mean") == 2.0


def test_values_known_to_a_bracket_carry_its_width_as_measurement_error() -> None:
    """Capacities from a search land on the same grid point start after start: the bracket [lo, hi) each
    came from is their error (ln(hi/lo)^2 / 12), not a zero spread that would be no evidence."""
    import math

    from seatrial.stats.effects import welch_log

    assert welch_log([2, 2], [8, 8], True).resolved is False
    q = (math.log(3 / 2) ** 2 / 12, math.log(9 / 8) ** 2 / 12)
    e = welch_log([2, 2], [8, 8], True, measurement_var=q)
    lo, hi = e.ci_pct
    assert e.method == "welch-log-per-start+bracket" and lo is not None and hi is not None
    assert lo < 300 < hi and lo > 0


def test_log_contrasts_cover_a_two_by_two_designs_factors() -> None:
    """A precision factor of 2x and a topology factor of 1.5x with no interaction, 3 starts each with a 10%
    start effect: each factor's interval covers its truth about 95% of the time, and two groups' plain ratio
    is the geometric means' ratio."""
    from seatrial.stats.effects import log_contrast

    rng = np.random.default_rng(5)
    truth = {"precision": 2.0, "topology": 1.5, "interaction": 1.0}
    weights = {"precision": (0.5, -0.5, 0.5, -0.5), "topology": (0.5, 0.5, -0.5, -0.5), "interaction": (1, -1, -1, 1)}
    covered = dict.fromkeys(truth, 0)
    trials = 2000
    for _ in range(trials):
        means = [2.0 * 1.5, 1.5, 2.0, 1.0]  # (P1, T1), (P2, T1), (P1, T2), (P2, T2)
        groups = [m * np.exp(rng.normal(0, 0.10, 3)) for m in means]
        for name, w in weights.items():
            lo, hi = log_contrast(groups, w).ci
            covered[name] += lo <= truth[name] <= hi
    for name, hits in covered.items():
        assert 0.93 <= hits / trials <= 0.975, (name, hits / trials)
    r = log_contrast([[2.0, 2.0 * 1.1], [1.0, 1.1]], (1, -1))
    assert r.ratio == pytest.approx(2.0) and r.ci[0] is not None and r.n == (2, 2)
