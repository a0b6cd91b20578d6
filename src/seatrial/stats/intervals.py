"""Percentiles and medians with confidence intervals, paired differences, direction consistency, and
the minimum sample sizes below which a verdict is INCONCLUSIVE.

Definitions (also in docs/statistics.md)
- percentile: numpy's linear interpolation (as :func:`seatrial.stats.distribution`).
- percentile interval: distribution-free, from order statistics. The number of observations below the
  true q-th percentile is Binomial(n, q/100); the interval is [x_(l), x_(u)] with the ranks l, u such
  that P(l <= B < u) >= 95%. Where u would pass the largest observation the upper bound is unknown
  (None), and a decision that needs it is INCONCLUSIVE: p99 of 100 samples has no upper bound.
- bootstrap interval: the 2.5% and 97.5% quantiles of a statistic over ``n_boot`` resamples with
  replacement (percentile bootstrap), seeded so that a run is reproducible.
- paired relative difference: ``(b_i - a_i) / a_i x 100`` for each pair ``(a_i, b_i)``.
- direction consistency: the share of non-zero differences whose sign is the majority sign.
- minimum sample size for the q-th percentile: at least ``TAIL_SAMPLES`` (10) observations beyond it on
  each side, ``ceil(10 / min(q, 100 - q) x 100)``: p50 -> 20, p90 -> 100, p95 -> 200, p99 -> 1000.
- samples beyond the q-th percentile (``tail_count``): ``floor(n x min(q, 100 - q) / 100)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel

TAIL_SAMPLES = 10
N_BOOT = 2000
CONFIDENCE = 0.95


class Estimate(BaseModel):
    """A statistic with its confidence interval and the sample size it came from. A bound that the
    data cannot give (too few samples beyond a tail percentile) is None."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    enough: bool

    def above(self, limit: float) -> bool:
        """The whole interval lies above ``limit``."""
        return self.ci_low is not None and self.ci_low > limit

    def below(self, limit: float) -> bool:
        """The whole interval lies below ``limit``."""
        return self.ci_high is not None and self.ci_high < limit


def min_samples(q: float) -> int:
    """Fewest observations for a meaningful q-th percentile (see the module docstring)."""
    if not 0 < q < 100:
        raise ValueError(f"percentile must be in (0, 100), got {q}")
    return math.ceil(TAIL_SAMPLES * 100 / min(q, 100 - q) - 1e-9)


def tail_count(n: int, q: float) -> int:
    """How many of ``n`` observations lie beyond the q-th percentile on its nearer tail."""
    return math.floor(n * min(q, 100 - q) / 100 + 1e-9)


def quantile_ranks(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the order statistics bounding the q-th percentile (see the module
    docstring); None for a bound beyond the sample."""
    if n <= 0:
        return None, None
    p = q / 100
    k = np.arange(n + 1, dtype=np.float64)
    logfact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))
    with np.errstate(divide="ignore"):
        logpmf = logfact[n] - logfact[k.astype(int)] - logfact[(n - k).astype(int)]
        logpmf = logpmf + k * np.log(p) + (n - k) * np.log1p(-p)
    cdf = np.cumsum(np.exp(logpmf - logpmf.max()))
    cdf /= cdf[-1]
    alpha = (1 - confidence) / 2
    low = int(np.searchsorted(cdf, alpha, side="right"))  # P(B < low) <= alpha: B counts values below
    high = int(np.searchsorted(cdf, 1 - alpha, side="left")) + 1
    return (low if low >= 1 else None), (high if high <= n else None)


def percentile_ci(values: Sequence[float], q: float, confidence: float = CONFIDENCE) -> Estimate:
    """The q-th percentile with its order-statistic interval; ``enough`` says whether
    n >= ``min_samples(q)``."""
    arr = np.sort(np.asarray(values, dtype=np.float64))
    n = len(arr)
    if n == 0:
        return Estimate(value=None, ci_low=None, ci_high=None, n=0, enough=False)
    low, high = quantile_ranks(n, q, confidence)
    return Estimate(
        value=float(np.percentile(arr, q)),
        ci_low=float(arr[low - 1]) if low else None,
        ci_high=float(arr[high - 1]) if high else None,
        n=n,
        enough=n >= min_samples(q),
    )


def median_ci(values: Sequence[float], need: int | None = None) -> Estimate:
    """The median with its order-statistic interval; ``enough`` is n >= ``need`` (default
    ``min_samples(50)``)."""
    est = percentile_ci(values, 50)
    return est.model_copy(update={"enough": est.n >= (need or min_samples(50))})


def bootstrap(
    values: Sequence[float],
    stat: Callable[[np.ndarray], np.ndarray],
    need: int,
    seed: int = 0,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """``stat`` (vectorised over axis 1 of a resample matrix) of ``values`` with its percentile CI."""
    arr = np.asarray(values, dtype=np.float64)
    n = len(arr)
    if n == 0:
        return Estimate(value=None, ci_low=None, ci_high=None, n=0, enough=False)
    value = float(stat(arr[None, :])[0])
    rng = np.random.default_rng(seed)
    samples = stat(arr[rng.integers(0, n, size=(n_boot, n))])
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(samples, [alpha, 1 - alpha])
    return Estimate(value=value, ci_low=float(lo), ci_high=float(hi), n=n, enough=n >= need)


def relative_differences_pct(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``(b_i - a_i) / a_i x 100`` for each pair; the sequences must pair up one to one."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    return [(y - x) / x * 100 for x, y in zip(a, b, strict=True) if x > 0]


def direction_consistency(diffs: Sequence[float]) -> float | None:
    """Share of non-zero differences with the majority sign; None when all are zero or none exist."""
    pos = sum(1 for d in diffs if d > 0)
    neg = sum(1 for d in diffs if d < 0)
    if pos + neg == 0:
        return None
    return max(pos, neg) / (pos + neg)
