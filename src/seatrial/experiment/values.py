"""A metric's values over a setting's starts, as the decisions and ``compare`` take them: one value per
start (a throughput, or the start's own statistic of its requests), the pooled request count behind
them, and whether a pooled percentile has the samples it needs (``stats.min_samples``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from seatrial.experiment.plan import CAPACITY
from seatrial.load.metric_table import LEVEL_METRICS
from seatrial.stats import TAIL_SAMPLES, min_samples, tail_count
from seatrial.stats.effects import Effect, bracket_variance, statistic, welch_log

#: One valid level of one start: its summary, "values" (request values by metric), and where the
#: experiment gives them "start", "slot" (its place in the run order), "stalled" (a reason or None);
#: "per_start" holds the start's value of each metric once computed.
Level = dict[str, Any]


def flat(values: Any) -> np.ndarray:
    """A start's values of one metric as one array (ITL keeps a list of gaps per request)."""
    if isinstance(values, np.ndarray):
        return values.ravel()
    if len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
        return np.concatenate([np.asarray(v, float) for v in values])
    return np.asarray(values, float)


def start_value(level: Level, metric: str) -> float | None:
    """One start's value of ``metric`` (kept in the level's ``per_start``, computed once)."""
    cache = level.setdefault("per_start", {})
    if metric not in cache:
        base, _, stat = metric.partition(".")
        if base.startswith(f"{CAPACITY}:"):  # the capacity the start's search found for that profile
            v = (level.get(CAPACITY) or {}).get(base.partition(":")[2])
        elif base in LEVEL_METRICS:
            v = level.get(base)
        else:
            v = statistic(flat(level["values"].get(base, [])), stat)
        cache[metric] = float(v) if v is not None and v > 0 and math.isfinite(v) else None
    value: float | None = cache[metric]
    return value


def per_start_slots(levels: list[Level], metric: str) -> list[tuple[int | None, float]]:
    """(run slot, value) of each start that has a value of ``metric``."""
    return [(lv.get("slot"), v) for lv in levels if (v := start_value(lv, metric)) is not None]


def per_start(levels: list[Level], metric: str) -> list[float]:
    return [v for _, v in per_start_slots(levels, metric)]


def pooled_n(levels: list[Level], metric: str) -> int | None:
    """How many request values (ITL: gaps) a request-level metric pools over these starts."""
    base, _, stat = metric.partition(".")
    return sum(len(flat(lv["values"].get(base, []))) for lv in levels) if stat else None


def effect(
    base: list[Level], treat: list[Level], metric: str, higher_is_better: bool, confidence: float
) -> Effect:
    """B against A from one value per start (``welch-log-per-start``; a capacity's search bracket is its
    measurement error)."""
    noise = (bracket_var(base, metric), bracket_var(treat, metric))
    return welch_log(per_start(base, metric), per_start(treat, metric), higher_is_better, confidence, noise)


def bracket_var(levels: list[Level], metric: str) -> float:
    """For a capacity: the mean over starts of ln(hi/lo)^2 / 12, the variance of a value known only to lie in
    its search's bracket [lo, hi) (0 where a search had no failing load above it); 0 for other metrics."""
    if not metric.startswith(f"{CAPACITY}:"):
        return 0.0
    name = metric.partition(":")[2]
    return bracket_variance(b for lv in levels if (b := (lv.get("capacity_brackets") or {}).get(name)))


def shortfall(base: list[Level], treat: list[Level], metric: str) -> str | None:
    """Why a pooled percentile is too thin to decide on (``min_samples``), with how many requests would do;
    None when it is not."""
    name, _, stat = metric.partition(".")
    if not stat.startswith("p"):
        return None
    q = float(stat[1:])
    need = min_samples(q)
    ns = [pooled_n(side, metric) or 0 for side in (base, treat)]
    if min(ns) >= need:
        return None
    unit = "ITL gaps" if name == "itl_ms" else "requests"
    beyond = "/".join(str(tail_count(n, q)) for n in ns)
    text = (f"{metric} needs {need} pooled {unit} per setting ({TAIL_SAMPLES} beyond the percentile); it has "
            f"{ns[0]} and {ns[1]} ({beyond} beyond)")  # fmt: skip
    starts = max(len(base), len(treat), 1)
    if name == "itl_ms":
        gaps = [len(r) for side in (base, treat) for lv in side for r in lv["values"].get(name, []) if len(r)]
        if gaps:
            requests = math.ceil(need / (sum(gaps) / len(gaps)))
            text += f": about {requests} requests per setting ({math.ceil(requests / starts)} per start)"
    else:
        text += f": {need} requests per setting would do ({math.ceil(need / starts)} per start)"
    return text
