"""A share of successes with its interval: the Wilson score interval, made cluster-aware.

Definitions (also in docs/statistics.md)
- Wilson score interval of k successes in n trials at confidence c (z the two-sided normal quantile):
  (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = k/n. It stays inside [0, 1] and keeps its
  coverage near p = 0 or 1, where the normal (Wald) interval collapses.
- Cluster-aware: when the trials come in clusters whose outcomes are not independent (the requests of one
  client worker, of one server start, or consecutive requests of an open-loop level that share the
  server's queue), n is replaced by the effective n = n / deff, with the design effect deff = the
  between-cluster variance of the ratio estimator over the binomial variance, never below 1 (an interval
  is never narrowed by clustering), and z by Student's t quantile with (clusters - 1) degrees of freedom
  (the between-cluster variance is itself estimated from few clusters). With fewer than ``MIN_CLUSTERS``
  clusters deff cannot be estimated and the plain interval is used (said in ``method``).
- Batches from the data (:func:`data_batches`): outcomes in send order are cut into consecutive batches
  ``BATCH_TIMES`` times their correlation time long: the series' integrated autocorrelation time (Sokal's
  window), and at least a floor from the requests that were in flight together (:func:`least_correlation`:
  a short series underestimates its own correlation). That correlation time is also the least design
  effect of the share (``share_ci``'s ``min_deff``): independent outcomes keep the plain Wilson interval, a
  queue that keeps outcomes alike for many requests widens it to what its correlation allows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_CLUSTERS = 4
BATCH_TIMES = 2.0  # batch length / integrated autocorrelation time (benchmarks/attainment_coverage.py)
SOKAL_WINDOW = 5.0  # the autocorrelation sum stops at the first lag M >= 5 tau(M)
# least correlation time per other request in flight (benchmarks/attainment_coverage.py, both loops)
OPEN_TAU_PER_OTHER = 5.0  # Poisson arrivals: a queue the rate feeds keeps outcomes alike 2.3-4.6 x L long
CLOSED_TAU_PER_OTHER = 0.5  # users that wait for their answers: no queue outgrows them


def z_two_sided(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - confidence) / 2))


def t_two_sided(confidence: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(1 - (1 - confidence) / 2, df))


def wilson(
    successes: float, n: float, confidence: float = 0.95, z: float | None = None
) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` in ``n`` (n may be an effective, fractional n; ``z``
    overrides the normal quantile of ``confidence``)."""
    if n <= 0:
        return 0.0, 1.0
    z = z_two_sided(confidence) if z is None else z
    p = min(1.0, max(0.0, successes / n))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # the share itself always lies inside (rounding put 1 - 1e-16 as the upper bound of 100 of 100)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True)
class Share:
    """``successes`` of ``n`` with its interval; ``n_eff`` and ``deff`` say how clustering widened it."""

    successes: int
    n: int
    share: float | None
    ci: tuple[float, float]
    n_eff: float
    deff: float
    clusters: int
    method: str


def design_effect(successes: Sequence[int], totals: Sequence[int]) -> float:
    """Between-cluster variance of the pooled share (ratio estimator) over the binomial variance, >= 1."""
    k, n = len(totals), sum(totals)
    if k < MIN_CLUSTERS or n == 0:
        return 1.0
    p = sum(successes) / n
    if p in (0.0, 1.0):
        return 1.0
    mean_size = n / k
    resid = sum((s - p * t) ** 2 for s, t in zip(successes, totals, strict=True))
    var_cluster = resid / (k * (k - 1) * mean_size**2)
    return max(1.0, var_cluster / (p * (1 - p) / n))


def share_ci(
    successes: Sequence[int], totals: Sequence[int], confidence: float = 0.95, min_deff: float = 1.0
) -> Share:
    """The pooled share over clusters (one cluster: a plain Wilson interval) with its interval; ``min_deff``
    a design effect the data is known to have at least (its correlation time, :func:`data_batches`): where it
    exceeds the one the clusters show, it sets the effective n and the normal quantile is used."""
    k, n = sum(successes), sum(totals)
    measured = design_effect(successes, totals)
    deff = max(measured, min_deff)
    n_eff = n / deff if n else 0.0
    clustered = len(totals) >= MIN_CLUSTERS and measured >= min_deff
    method = f"wilson-clustered ({len(totals)} clusters, t quantile)" if clustered else "wilson"
    if deff > measured:
        method = f"wilson (design effect {deff:.3g} from the queue's correlation, over {len(totals)} clusters' {measured:.3g})"
    z = t_two_sided(confidence, len(totals) - 1) if clustered else None
    lo, hi = wilson(k / n * n_eff if n else 0.0, n_eff, confidence, z)
    return Share(k, n, k / n if n else None, (lo, hi), n_eff, deff, len(totals), method)


def batches(outcomes: Sequence[bool], count: int) -> tuple[list[int], list[int]]:
    """``outcomes`` in arrival order cut into ``count`` consecutive clusters (batch means): the
    successes and totals of each."""
    count = max(1, min(count, len(outcomes)))
    size = len(outcomes) / count
    edges = [round(i * size) for i in range(count + 1)]
    parts = [outcomes[a:b] for a, b in itertools.pairwise(edges) if b > a]
    return [sum(p) for p in parts], [len(p) for p in parts]


def correlation_time(outcomes: Sequence[bool]) -> float:
    """The integrated autocorrelation time of a 0/1 series, 1 + 2 sum of its autocorrelations up to Sokal's
    window (the first lag M with M >= ``SOKAL_WINDOW`` tau(M)); 1 for an independent series, and for a
    constant one (nothing to correlate)."""
    import numpy as np

    x = np.asarray(outcomes, dtype=float)
    n = len(x)
    if n < 3 or x.min() == x.max():
        return 1.0
    x = x - x.mean()
    spectrum = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    rho = acf / acf[0]
    tau = 1.0
    for lag in range(1, n):
        tau += 2 * rho[lag]
        if lag >= SOKAL_WINDOW * tau:
            break
    return max(1.0, float(tau))


def least_correlation(in_flight: float, open_loop: bool) -> float:
    """The least correlation time (in requests) of outcomes that shared a server with ``in_flight`` requests
    in it on average: a multiple of the others in flight, larger for an open loop than for a closed one (a
    short series cannot see its own correlation; benchmarks/attainment_coverage.py measures both)."""
    per = OPEN_TAU_PER_OTHER if open_loop else CLOSED_TAU_PER_OTHER
    return per * max(in_flight - 1.0, 0.0)


def data_batches(outcomes: Sequence[bool], floor: float = 1.0) -> tuple[list[int], list[int], float]:
    """``outcomes`` in send order cut into consecutive batches ``BATCH_TIMES`` x their correlation time long
    (the series' own, at least ``floor``: :func:`least_correlation`), batches of one where they are
    independent: the successes and totals of each, and the correlation time (the least design effect of
    their share)."""
    tau = max(correlation_time(outcomes), floor, 1.0)
    length = max(1, math.ceil(BATCH_TIMES * tau))
    good, total = batches(outcomes, max(1, len(outcomes) // length))
    return good, total, tau
