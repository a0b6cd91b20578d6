"""Statistics of trials: percentiles with bootstrap confidence intervals, paired differences,
direction consistency, and the minimum sample sizes below which a verdict is INCONCLUSIVE.

Definitions
- percentile: numpy's linear interpolation (as ``load.stats.distribution``).
- bootstrap CI: the (1-confidence)/2 and 1-(1-confidence)/2 quantiles of the statistic over
  ``n_boot`` resamples with replacement (percentile bootstrap), seeded so a run is reproducible.
- paired relative difference: ``(b_i - a_i) / a_i x 100`` for each pair ``(a_i, b_i)``.
- direction consistency: the share of non-zero differences whose sign is the majority sign
  (1.0 when every pair moves the same way, 0.5 when they split evenly).
- minimum sample size for the q-th percentile: ``ceil(TAIL_SAMPLES / (1 - q/100))``, so that at
  least ``TAIL_SAMPLES`` observations lie above the estimate (p50 -> 4, p90 -> 20, p99 -> 200).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel

TAIL_SAMPLES = 2
N_BOOT = 2000
CONFIDENCE = 0.95


class Estimate(BaseModel):
    """A statistic with its bootstrap confidence interval and the sample size it came from."""

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
    if not 0 <= q < 100:
        raise ValueError(f"percentile must be in [0, 100), got {q}")
    return max(TAIL_SAMPLES, math.ceil(TAIL_SAMPLES / (1 - q / 100) - 1e-9))


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


def percentile_ci(values: Sequence[float], q: float, seed: int = 0) -> Estimate:
    """The q-th percentile with its bootstrap CI; ``enough`` says whether n >= ``min_samples(q)``."""
    return bootstrap(values, lambda m: np.percentile(m, q, axis=1), min_samples(q), seed)


def median_ci(values: Sequence[float], seed: int = 0, need: int | None = None) -> Estimate:
    return bootstrap(values, lambda m: np.median(m, axis=1), need or min_samples(50), seed)


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


def median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None
