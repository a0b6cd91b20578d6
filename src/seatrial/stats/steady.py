"""Where a level's steady state begins, by its own data (issue 38 item 2).

MSER-5 (White 1997; Franklin and White 2008): the series (a level's TTFTs in send order) is cut into
batches of 5 and their means ``y``; the warm-up to drop is the ``d`` batches, within the first half, that
minimise the marginal standard error of what is left, ``sum((y[d:] - mean(y[d:]))**2) / (m - d)**2``.
On a steady series that minimum may fall anywhere in the first half (it costs requests, not bias: only
a capacity probe, which sizes its next run by what it has, cuts it; load.window). Fewer than
``MIN_BATCHES`` batches cannot place a warm-up: nothing is cut, and the level says so.

Whether what is left is stationary: Heidelberger and Welch's test (1983), the Cramér-von Mises statistic
of the series' scaled partial sums, ``mean(B_k**2)`` with ``B_k = (S_k - k mean) / sqrt(n s2)``, against
the Brownian bridge's quantile at 1% (``CVM_CRITICAL``, 0.743); ``s2`` is the long-run variance from
``TREND_BATCHES`` batch means (the series' correlation counted). MSER's own minimum alone is no such
test: on a steady series whose level wandered by a tenth it lands anywhere.

A level whose latency keeps rising (the slope of its batch means over send order, by least squares, above
zero at one-sided ``RISING_CONFIDENCE`` by Student's t on batches - 2 degrees of freedom, over
``TREND_BATCHES`` batches: long batches are nearly independent; and a fitted rise over the series of at
least ``RISE_SHARE`` of its mean: a queue that keeps growing rises by multiples, while a steady one whose
batches are shorter than its correlation wanders) and that is not stationary has a queue that keeps
growing; for an open loop (arrivals at a rate) that is an overloaded server. benchmarks/level_window.py
measures both errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

MSER_BATCH = 5
MIN_BATCHES = 20  # 100 observations
TREND_BATCHES = 10
RISING_CONFIDENCE = 0.99
RISE_SHARE = 0.2  # ... and its fitted rise over the series at least this share of its mean
CVM_CRITICAL = 0.743  # the integral of a squared Brownian bridge exceeds it with probability 1%


@dataclass(frozen=True)
class Truncation:
    cut: int  # leading observations to drop (a multiple of MSER_BATCH, at most half the series)
    stationary: bool | None  # None: too few observations to tell
    rising: bool = False


def mser5(series: np.ndarray) -> Truncation:
    """MSER-5's warm-up of ``series`` and whether the series became stationary within it."""
    m = len(series) // MSER_BATCH
    if m < MIN_BATCHES:
        return Truncation(0, None)
    y = np.asarray(series[: m * MSER_BATCH], dtype=float).reshape(m, MSER_BATCH).mean(axis=1)
    s1 = np.cumsum(y[::-1])[::-1]  # suffix sums from batch d
    s2 = np.cumsum((y * y)[::-1])[::-1]
    left = m - np.arange(m)
    mser = (s2 - s1 * s1 / left) / left**2
    cut = int(np.argmin(mser[: m // 2 + 1])) * MSER_BATCH
    rest = np.asarray(series[cut:], dtype=float)
    stationary = cramer_von_mises(rest) <= CVM_CRITICAL
    return Truncation(cut, stationary, not stationary and rising(rest))


def cramer_von_mises(series: np.ndarray) -> float:
    """Heidelberger and Welch's statistic: the mean squared scaled partial sum of ``series``' deviations."""
    n = len(series)
    k = n // TREND_BATCHES
    means = series[: k * TREND_BATCHES].reshape(TREND_BATCHES, k).mean(axis=1)
    s2 = float(np.var(means, ddof=1)) * k  # the long-run variance
    if s2 <= 0:
        return 0.0 if np.ptp(series) == 0 else float("inf")
    bridge = np.cumsum(series - series.mean()) / np.sqrt(n * s2)
    return float(np.mean(bridge**2))


def rising(series: np.ndarray) -> bool:
    """Whether ``series`` keeps rising: the least-squares slope of TREND_BATCHES batch means is above zero
    at one-sided RISING_CONFIDENCE."""
    k = len(series) // TREND_BATCHES
    if k < 1:
        return False
    y = np.asarray(series[: k * TREND_BATCHES], dtype=float).reshape(TREND_BATCHES, k).mean(axis=1)
    fit = sps.linregress(np.arange(TREND_BATCHES), y)
    if fit.slope * (TREND_BATCHES - 1) < RISE_SHARE * abs(float(y.mean())):
        return False  # a wander, not a queue that keeps growing
    if not np.isfinite(fit.stderr) or fit.stderr == 0:
        return bool(fit.slope > 0)
    return bool(fit.slope / fit.stderr > sps.t.ppf(RISING_CONFIDENCE, TREND_BATCHES - 2))
