"""Effects between two settings measured over fresh server starts, how sure a set of them is, and how
many starts a rough power estimate would need.

Definitions (also in docs/statistics.md)
- gain: the improvement of B over A in percent, signed so that positive is better: (B/A - 1) x 100
  for a higher-is-better metric, (A/B - 1) x 100 for a lower-is-better one, where A and B are the
  geometric means of the settings' per-start values.
- per-start value: what one start measured: a throughput, or one statistic of its own requests
  (``p99`` of its TTFTs, ``p99`` of the gaps of all its requests for ITL). Starts, not requests, are
  the replicates: requests of one server share its state, so their spread understates a restart's.
- welch-log-per-start: Welch's t interval on the difference of the mean log per-start values, with
  Welch-Satterthwaite degrees of freedom. Needs 2 starts a side.
- resolution: a pooled between-start SD of the logs below ``RESOLUTION_LOG`` (1 part in 10,000) is no
  evidence (values that agree that closely are copies, quantised, or one measurement read twice):
  the effect has no interval and ``resolved`` is False.
- one-sided p of a claim beyond +-threshold: the Welch t probability of a gain at least as far from the
  threshold as the one seen, toward the side the estimate lies on (what Holm's procedure ranks).
- Holm: the m claims sorted by p; the i-th is tested at alpha / (m - i + 1) until one fails, and every
  later one at the level that failed.
- within-run interval (``bootstrap-requests-within-run``): for one start per side only, a percentile
  bootstrap over requests, each request with all its values (ITL: all its gaps together). It holds
  the spread of those requests, not a restart's.
- rough power estimate: the fewest starts per setting whose interval would sit inside +-min_gain at a
  true gain of 0 with the stated power (which also gives that power to an interval clearing +-min_gain at
  a true gain of twice min_gain), at an upper confidence bound of the between-start SD (chi-square,
  one-sided).
- common slope: per-start log values against their run slot, one line per setting with a shared slope
  (least squares within settings), with its t interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import chdtri, stdtr, stdtrit

N_BOOT = 2000
MAX_STARTS = 1000
RESOLUTION_LOG = 1e-4
POWER = 0.8
POWER_SD_UPPER = 0.9  # the one-sided confidence of the SD's upper bound in a rough power estimate


def t_quantile(q: float, df: float) -> float:
    return float(stdtrit(df, q))


@dataclass(frozen=True)
class Effect:
    gain_pct: float | None
    ci_pct: tuple[float | None, float | None]
    method: str
    n_a: int
    n_b: int
    sd_log: float | None  # between-start SD of the log values, pooled over both settings
    log_gain: float | None = None  # signed: positive is better
    se: float | None = None
    df: float | None = None
    resolved: bool = True  # False: the between-start SD is below RESOLUTION_LOG

    @property
    def has_interval(self) -> bool:
        return self.se is not None and self.df is not None and self.log_gain is not None

    def interval(self, confidence: float) -> tuple[float | None, float | None]:
        """The interval of the gain at another confidence (Welch effects only)."""
        if not self.has_interval:
            return self.ci_pct
        assert self.se is not None and self.df is not None and self.log_gain is not None
        half = t_quantile(1 - (1 - confidence) / 2, self.df) * self.se
        return _pct(self.log_gain - half), _pct(self.log_gain + half)

    def p_beyond(self, threshold_pct: float) -> float | None:
        """One-sided p of the claim that the gain lies beyond +-threshold on the estimate's side."""
        if not self.has_interval:
            return None
        assert self.se is not None and self.df is not None and self.log_gain is not None
        edge = math.log1p(threshold_pct / 100)
        above = float(stdtr(self.df, -(self.log_gain - edge) / self.se))
        below = float(stdtr(self.df, (self.log_gain + edge) / self.se))
        return min(above, below)


def _pct(log_gain: float) -> float:
    return math.expm1(log_gain) * 100


def _signed(higher_is_better: bool, d: float) -> float:
    return d if higher_is_better else -d


def pooled_sd(la: np.ndarray, lb: np.ndarray) -> float | None:
    """SD pooled over two groups by their degrees of freedom; None with none."""
    dof = len(la) + len(lb) - 2
    if dof < 1:
        return None
    ss = sum(float(((x - x.mean()) ** 2).sum()) for x in (la, lb) if len(x))
    return math.sqrt(ss / dof)


def bracket_variance(brackets: Iterable[tuple[float | None, float | None]]) -> float:
    """The mean over starts of ln(hi/lo)^2 / 12: the variance of a log value known only to lie in its search's
    bracket [lo, hi) (starts with no failing load above them are left out; 0 with none)."""
    widths = [math.log(hi / lo) ** 2 / 12 for lo, hi in brackets if lo and hi]
    return sum(widths) / len(widths) if widths else 0.0


def welch_log(
    a: Sequence[float], b: Sequence[float], higher_is_better: bool, confidence: float = 0.95,
    measurement_var: tuple[float, float] = (0.0, 0.0),
) -> Effect:  # fmt: skip
    """B against A from one value per start each (see the module docstring). ``measurement_var``: each
    side's variance of one value's log from how it was measured, added to its between-start variance: a
    value known only to lie in a bracket [lo, hi) (a capacity search's) carries ln(hi/lo)^2 / 12, so that
    starts that landed on the same grid point are not taken for a measurement without error."""
    method = "welch-log-per-start" + ("+bracket" if any(measurement_var) else "")
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    na, nb = len(la), len(lb)
    if na == 0 or nb == 0 or not (np.isfinite(la).all() and np.isfinite(lb).all()):
        return Effect(None, (None, None), method, na, nb, None)
    d = _signed(higher_is_better, float(lb.mean() - la.mean()))
    sd = pooled_sd(la, lb)
    if na < 2 or nb < 2:
        return Effect(_pct(d), (None, None), method, na, nb, sd, d)
    if (sd is None or sd < RESOLUTION_LOG) and not any(measurement_var):
        return Effect(_pct(d), (None, None), method, na, nb, sd, d, resolved=False)
    va = (la.var(ddof=1) + measurement_var[0]) / na
    vb = (lb.var(ddof=1) + measurement_var[1]) / nb
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    e = Effect(_pct(d), (None, None), method, na, nb, sd, d, se, df)
    return Effect(_pct(d), e.interval(confidence), method, na, nb, sd, d, se, df)


def statistic(values: Sequence[float] | np.ndarray, stat: str) -> float | None:
    """``stat`` (``mean`` or ``p50``..``p99``, numpy's linear percentile) of ``values``; None when empty."""
    arr = np.asarray(values, float)
    n = len(arr)
    if not n:
        return None
    if stat == "mean":
        return float(arr.mean())
    pos = float(stat.removeprefix("p")) / 100 * (n - 1)  # np.percentile's linear rule, by partition
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    part = np.partition(arr, (lo, hi))
    return float(part[lo] + (pos - lo) * (part[hi] - part[lo]))


def within_run(
    a: Sequence[Sequence[float]] | Sequence[np.ndarray],
    b: Sequence[Sequence[float]] | Sequence[np.ndarray],
    stat: str,
    higher_is_better: bool,
    confidence: float = 0.95,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> Effect:
    """B against A from one run each, ``a`` and ``b`` holding each request's values (see the module
    docstring: a request is resampled with all its values)."""
    method = "bootstrap-requests-within-run"
    ra = [np.asarray(r, float) for r in a if len(r)]
    rb = [np.asarray(r, float) for r in b if len(r)]
    x = statistic(np.concatenate(ra), stat) if ra else None
    y = statistic(np.concatenate(rb), stat) if rb else None
    if not x or not y or x <= 0 or y <= 0:
        return Effect(None, (None, None), method, 1, 1, None)
    d = _signed(higher_is_better, math.log(y / x))
    rng = np.random.default_rng(seed)
    logs = np.log(_boot(rb, stat, rng, n_boot) / _boot(ra, stat, rng, n_boot))
    logs = logs[np.isfinite(logs)]
    alpha = (1 - confidence) / 2
    lo, hi = sorted(_signed(higher_is_better, float(v)) for v in np.quantile(logs, [alpha, 1 - alpha]))
    return Effect(_pct(d), (_pct(lo), _pct(hi)), method, 1, 1, None, d)


def _boot(requests: list[np.ndarray], stat: str, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """``stat`` over ``n_boot`` resamples of whole requests (each padded to the longest with NaN, so a
    resample is one row of a matrix)."""
    n, width = len(requests), max(len(r) for r in requests)
    padded = np.full((n, width), np.nan)
    for i, r in enumerate(requests):
        padded[i, : len(r)] = r
    out = np.empty(n_boot)
    step = max(1, 4_000_000 // (n * width))
    for start in range(0, n_boot, step):
        rows = padded[rng.integers(0, n, size=(min(step, n_boot - start), n))].reshape(-1, n * width)
        out[start : start + len(rows)] = _row_stat(rows, stat)
    return out


def _row_stat(rows: np.ndarray, stat: str) -> np.ndarray:
    """``stat`` of each row, ignoring NaN (numpy's linear percentile of the values present)."""
    if stat == "mean":
        return np.asarray(np.nanmean(rows, axis=1))
    ordered = np.sort(rows, axis=1)  # NaN last
    count = (~np.isnan(ordered)).sum(axis=1)
    pos = float(stat[1:]) / 100 * (count - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, count - 1)
    at = np.arange(len(rows))
    return np.asarray(ordered[at, lo] + (pos - lo) * (ordered[at, hi] - ordered[at, lo]))


def holm_levels(pvalues: Sequence[float | None], alpha: float) -> list[float | None]:
    """Per claim, the one-sided level Holm's step-down tests it at (see the module docstring); None
    for a claim without a p value (not in the family)."""
    ranked = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(ranked)
    out: list[float | None] = [None] * len(pvalues)
    level, failed = alpha, False
    for step, (p, i) in enumerate(ranked):
        if not failed:
            level = alpha / (m - step)
            failed = p > level
        out[i] = level
    return out


def power_starts(
    min_gain_pct: float, sd_log: float | None, df: int, confidence: float = 0.95, power: float = POWER
) -> tuple[int | None, float | None]:
    """(starts per setting, the SD upper bound used) of a rough power estimate (see the module docstring);
    None when the SD is unknown or more than ``MAX_STARTS`` would be needed."""
    if sd_log is None or df < 1 or min_gain_pct <= 0:
        return None, None
    upper = sd_log * math.sqrt(df / float(chdtri(df, POWER_SD_UPPER)))
    if upper == 0:
        return 2, upper
    edge = math.log1p(min_gain_pct / 100)

    def enough(n: int) -> bool:
        t = t_quantile(1 - (1 - confidence) / 2, 2 * n - 2) + t_quantile((1 + power) / 2, 2 * n - 2)
        return bool(t * upper * math.sqrt(2 / n) <= edge)

    if not enough(MAX_STARTS):
        return None, upper
    lo, hi = 1, MAX_STARTS  # enough(hi) holds, enough(lo) does not (the half-width shrinks as n grows)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi, upper


@dataclass(frozen=True)
class Slope:
    per_slot: float  # in the log values per run slot
    ci: tuple[float, float]
    n: int
    df: int


def common_slope(
    groups: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float = 0.95
) -> Slope | None:
    """The shared slope of y on x over groups of (x, y), each group with its own intercept (see the
    module docstring); None with fewer than one residual degree of freedom or no spread in x."""
    xs = [np.asarray(x, float) for x, y in groups if len(x)]
    ys = [np.asarray(y, float) for x, y in groups if len(x)]
    n, k = sum(len(x) for x in xs), len(xs)
    df = n - k - 1
    sxx = sum(float(((x - x.mean()) ** 2).sum()) for x in xs)
    if df < 1 or sxx == 0:
        return None
    slope = sum(float(((x - x.mean()) * (y - y.mean())).sum()) for x, y in zip(xs, ys, strict=True)) / sxx
    ss = sum(float(((y - y.mean() - slope * (x - x.mean())) ** 2).sum()) for x, y in zip(xs, ys, strict=True))
    half = t_quantile(1 - (1 - confidence) / 2, df) * math.sqrt(ss / df / sxx)
    return Slope(slope, (slope - half, slope + half), n, df)


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """Geometric mean and between-value SD of the logs (about the CV) of per-start values."""
    arr = np.asarray([v for v in values if v and v > 0], float)
    if not len(arr):
        return {"n": 0, "geomean": None, "sd_log": None}
    logs = np.log(arr)
    return {
        "n": len(arr),
        "geomean": float(math.exp(logs.mean())),
        "sd_log": float(logs.std(ddof=1)) if len(arr) > 1 else None,
    }


def within_sd(starts: Sequence[Sequence[float]] | Sequence[np.ndarray]) -> float | None:
    """The pooled SD of the values inside each start (the spread a start's requests have)."""
    parts = [(len(s) - 1, float(np.var(s, ddof=1))) for s in starts if len(s) > 1]
    dof = sum(n for n, _ in parts)
    return math.sqrt(sum(n * v for n, v in parts) / dof) if dof else None


@dataclass(frozen=True)
class Ratio:
    """A ratio of geometric means (or a product of such ratios) with its interval and degrees of freedom."""

    ratio: float | None
    ci: tuple[float | None, float | None]
    df: float | None
    n: tuple[int, ...]


def log_contrast(
    groups: Sequence[Sequence[float]], weights: Sequence[float], confidence: float = 0.95
) -> Ratio:
    """exp(sum_i w_i mean(log x_i)) over groups of per-start values, with a Welch-Satterthwaite t interval
    (each group's variance its own): w = (1, -1) is the ratio of two groups' geometric means; w = (1/2, -1/2,
    1/2, -1/2) over a 2 x 2 design is one factor's ratio averaged over the other's two levels, and
    (1, -1, -1, 1) their interaction. No interval unless every group has 2 values."""
    logs = [np.log(np.asarray(g, float)) for g in groups]
    ns = tuple(len(x) for x in logs)
    if min(ns, default=0) == 0 or not all(np.isfinite(x).all() for x in logs):
        return Ratio(None, (None, None), None, ns)
    est = float(sum(w * x.mean() for w, x in zip(weights, logs, strict=True)))
    if min(ns) < 2:
        return Ratio(math.exp(est), (None, None), None, ns)
    parts = [w * w * x.var(ddof=1) / len(x) for w, x in zip(weights, logs, strict=True)]
    var = sum(parts)
    if var <= 0:
        return Ratio(math.exp(est), (None, None), None, ns)
    df = var**2 / sum(p * p / (len(x) - 1) for p, x in zip(parts, logs, strict=True) if p > 0)
    half = t_quantile(1 - (1 - confidence) / 2, df) * math.sqrt(var)
    return Ratio(math.exp(est), (math.exp(est - half), math.exp(est + half)), df, ns)
