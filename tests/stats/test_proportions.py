"""Wilson intervals, plain and cluster-aware (seatrial.stats.proportions)."""

from __future__ import annotations

import numpy as np
import pytest

from seatrial.stats.proportions import batches, design_effect, share_ci, wilson


def test_wilson_matches_the_textbook_values() -> None:
    # Newcombe (1998), method 3: 81 of 263 -> [0.2553, 0.3662]; 9 of 10 -> [0.5958, 0.9821]
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-4)
    assert wilson(9, 10) == pytest.approx((0.5958, 0.9821), abs=5e-4)
    lo, hi = wilson(10, 10)
    assert hi == pytest.approx(1.0) and 0.69 < lo < 0.73  # stays informative at p = 1, where Wald collapses to a point


def test_clusters_that_agree_keep_the_design_effect_at_one_and_clusters_that_differ_widen_it() -> None:
    same = share_ci([45, 45, 45, 45, 45], [50] * 5)
    assert same.deff == 1.0 and same.ci[0] < wilson(225, 250)[0] < wilson(225, 250)[1] < same.ci[1]
    apart = share_ci([50, 50, 40, 40, 45], [50] * 5)
    assert apart.deff > 1.5 and apart.n_eff < 250
    assert apart.ci[0] < same.ci[0] and apart.ci[1] > same.ci[1] and apart.share == same.share
    assert "clustered" in apart.method and share_ci([9], [10]).method == "wilson"


def test_design_effect_needs_enough_clusters_and_batches_keep_order() -> None:
    assert design_effect([5, 0, 5], [5, 5, 5]) == 1.0  # three clusters cannot estimate it
    good, total = batches([True] * 6 + [False] * 4, 5)
    assert total == [2, 2, 2, 2, 2] and good == [2, 2, 2, 0, 0]


def test_clustered_interval_covers_autocorrelated_outcomes_where_the_plain_one_does_not() -> None:
    """Outcomes in runs (a queue that stays long, then clears): the plain interval undercovers."""
    rng = np.random.default_rng(7)
    p, n, covered_plain, covered_clustered = 0.85, 200, 0, 0
    stay = 0.97  # a good request is followed by a good one w.p. 0.97; a bad one by a good one w.p. back
    back = (1 - stay) * p / (1 - p)  # so that the chain's stationary share of good requests is p
    trials = 400
    for _ in range(trials):
        state, out = rng.random() < p, []
        for _ in range(n):
            state = rng.random() < (stay if state else back)
            out.append(state)
        g, t = batches(out, 10)
        true_share = p  # the chain's stationary share
        lo, hi = wilson(sum(out), n)
        covered_plain += lo <= true_share <= hi
        c = share_ci(g, t)
        covered_clustered += c.ci[0] <= true_share <= c.ci[1]
    assert covered_clustered > covered_plain


def _chain(rng: np.random.Generator, n: int, p: float = 0.85, stay: float = 0.97) -> list[bool]:
    back = (1 - stay) * p / (1 - p)
    state, out = bool(rng.random() < p), []
    for _ in range(n):
        state = bool(rng.random() < (stay if state else back))
        out.append(state)
    return out


def test_the_correlation_time_is_the_chains_and_one_for_independent_outcomes() -> None:
    from seatrial.stats.proportions import correlation_time, data_batches, least_correlation

    rng = np.random.default_rng(3)
    # the chain's second eigenvalue is stay - back = 0.8: tau = (1 + 0.8) / (1 - 0.8) = 9
    assert 7 <= correlation_time(_chain(rng, 50_000)) <= 11
    assert 1 <= correlation_time(list(rng.random(50_000) < 0.9)) <= 1.3
    assert correlation_time([True] * 100) == 1.0
    # a short series cannot see its correlation: the others in flight together set the least
    assert data_batches([True, False] * 50, least_correlation(11, open_loop=True))[2] == 50
    assert least_correlation(11, open_loop=False) == 5 and least_correlation(0.5, open_loop=True) == 0


def test_batches_of_the_correlation_time_cover_where_the_series_own_estimate_does_not() -> None:
    """200 outcomes of the chain (tau 9), a floor of 10 (3 in flight under an open loop): the interval with the floor
    covers the stationary share >= 93% of 400 times; its own short-series estimate of tau does not."""
    from seatrial.stats.proportions import data_batches, least_correlation

    rng = np.random.default_rng(11)
    hits = {"floor": 0, "own": 0}
    for _ in range(400):
        out = _chain(rng, 200)
        for name, floor in (("floor", least_correlation(3.0, open_loop=True)), ("own", 1.0)):
            g, t, tau = data_batches(out, floor)
            lo, hi = share_ci(g, t, min_deff=tau).ci
            hits[name] += lo <= 0.85 <= hi
    assert hits["floor"] >= 0.93 * 400 and hits["own"] < hits["floor"], hits
