"""Effects between two settings measured over fresh server starts, and how many starts would settle one.

Definitions (also in docs/statistics.md)
- gain: the improvement of B over A in percent, signed so that positive is better: (B/A - 1) x 100
  for a higher-is-better metric, (A/B - 1) x 100 for a lower-is-better one.
- per-start metrics (throughput: one value per start): Welch's t interval on the difference of the
  mean log values (ratio of geometric means), so that starts, not requests, are the replicates.
- request-level metrics (a pooled percentile or mean of TTFT, TPOT, ITL, E2E, per-user speed over the
  starts' requests): the pooled statistic's ratio, with a two-level bootstrap interval (resample starts,
  then requests within each chosen start), so that start-to-start spread is in the interval.
- starts needed: per setting, the fewest n whose Welch interval at 80% power clears the nearest
  decision boundary (+-threshold) at the observed effect and the observed between-start SD of the log
  values; None when the effect sits on the boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

N_BOOT = 2000
MAX_STARTS = 1000


@dataclass(frozen=True)
class Effect:
    gain_pct: float | None
    ci_pct: tuple[float | None, float | None]
    method: str
    n_a: int
    n_b: int
    sd_log: float | None  # between-start SD of the log values, pooled over both settings (for power)


def _t(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def _pct(log_gain: float) -> float:
    return (math.exp(log_gain) - 1) * 100


def _signed(higher_is_better: bool, d: float) -> float:
    return d if higher_is_better else -d


def _sd_log(a: np.ndarray, b: np.ndarray) -> float | None:
    parts = [x.var(ddof=1) for x in (a, b) if len(x) >= 2]
    return math.sqrt(float(np.mean(parts))) if parts else None


def welch_log(
    a: Sequence[float], b: Sequence[float], higher_is_better: bool, confidence: float = 0.95
) -> Effect:
    """B against A from one value per start each (see the module docstring)."""
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    na, nb = len(la), len(lb)
    if na == 0 or nb == 0 or not (np.isfinite(la).all() and np.isfinite(lb).all()):
        return Effect(None, (None, None), "welch-log", na, nb, None)
    d = float(lb.mean() - la.mean())
    gain = _pct(_signed(higher_is_better, d))
    sd = _sd_log(la, lb)
    if na < 2 or nb < 2:
        return Effect(gain, (None, None), "welch-log", na, nb, sd)
    va, vb = la.var(ddof=1) / na, lb.var(ddof=1) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return Effect(gain, (gain, gain), "welch-log", na, nb, sd)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    half = _t(1 - (1 - confidence) / 2, df) * se
    ends = sorted(_pct(_signed(higher_is_better, x)) for x in (d - half, d + half))
    return Effect(gain, (ends[0], ends[1]), "welch-log", na, nb, sd)


def _stat(values: np.ndarray, stat: str) -> float:
    return (
        float(values.mean())
        if stat == "mean"
        else float(np.percentile(values, float(stat.removeprefix("p"))))
    )


def pooled_stat(starts: Sequence[Sequence[float]] | Sequence[np.ndarray], stat: str) -> float | None:
    """``stat`` (``mean`` or ``p50``..``p99``) of every start's values pooled."""
    values = [v for s in starts for v in s]
    return _stat(np.asarray(values, float), stat) if values else None


def pooled_effect(
    a: Sequence[Sequence[float]],
    b: Sequence[Sequence[float]],
    stat: str,
    higher_is_better: bool,
    confidence: float = 0.95,
    seed: int = 0,
    n_boot: int = N_BOOT,
    min_starts: int = 2,
) -> Effect:
    """B against A from the requests of each start (see the module docstring). With fewer than
    ``min_starts`` starts on a side there is no interval; ``min_starts=1`` allows single runs, whose
    interval then holds only the spread of their requests (method ``bootstrap-requests``)."""
    sa = [np.asarray(s, float) for s in a if len(s)]
    sb = [np.asarray(s, float) for s in b if len(s)]
    per_start = [np.asarray([_stat(s, stat) for s in g]) for g in (sa, sb)]
    sd = _sd_log(*(np.log(x) for x in per_start)) if all((x > 0).all() for x in per_start) else None
    pa, pb = pooled_stat(sa, stat), pooled_stat(sb, stat)
    method = "bootstrap-2level" if min(len(sa), len(sb)) >= 2 else "bootstrap-requests"
    if not pa or not pb:
        return Effect(None, (None, None), method, len(sa), len(sb), sd)
    gain = _pct(_signed(higher_is_better, math.log(pb / pa)))
    if min(len(sa), len(sb)) < max(1, min_starts):
        return Effect(gain, (None, None), method, len(sa), len(sb), sd)
    rng = np.random.default_rng(seed)
    logs = np.empty(n_boot)
    for i in range(n_boot):
        ra, rb = _resample(sa, rng), _resample(sb, rng)
        x, y = _stat(ra, stat), _stat(rb, stat)
        logs[i] = math.log(y / x) if x > 0 and y > 0 else np.nan
    logs = logs[np.isfinite(logs)]
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(logs, [alpha, 1 - alpha])
    ends = sorted(_pct(_signed(higher_is_better, float(x))) for x in (lo, hi))
    return Effect(gain, (ends[0], ends[1]), method, len(sa), len(sb), sd)


def _resample(starts: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    chosen = rng.integers(0, len(starts), len(starts))
    return np.concatenate([(s := starts[k])[rng.integers(0, len(s), len(s))] for k in chosen])


def starts_needed(
    gain_pct: float | None,
    threshold_pct: float,
    sd_log: float | None,
    confidence: float = 0.95,
    power: float = 0.8,
) -> int | None:
    """Fewest starts per setting that would resolve an effect of ``gain_pct`` against ``threshold_pct``
    at the between-start SD ``sd_log`` (see the module docstring); None when it cannot be said."""
    if gain_pct is None or sd_log is None:
        return None
    distance = abs(abs(math.log1p(gain_pct / 100)) - math.log1p(threshold_pct / 100))
    if distance == 0:
        return None
    if sd_log == 0:
        return 2
    for n in range(2, MAX_STARTS + 1):
        df = 2 * n - 2
        half = (_t(1 - (1 - confidence) / 2, df) + _t(power, df)) * sd_log * math.sqrt(2 / n)
        if half <= distance:
            return n
    return None


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean, between-value SD and CV (SD / mean) of per-start values."""
    arr = np.asarray(values, float)
    if not len(arr):
        return {"n": 0, "mean": None, "sd": None, "cv": None}
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if len(arr) > 1 else None
    return {"n": len(arr), "mean": mean, "sd": sd, "cv": sd / mean if sd is not None and mean else None}


def within_sd(starts: Sequence[Sequence[float]]) -> float | None:
    """The pooled SD of the values inside each start (the spread a start's requests have)."""
    parts = [(len(s) - 1, float(np.var(s, ddof=1))) for s in starts if len(s) > 1]
    dof = sum(n for n, _ in parts)
    return math.sqrt(sum(n * v for n, v in parts) / dof) if dof else None
