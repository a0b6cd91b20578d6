"""Repeats of one measurement: their median and spread. The spread is the coefficient of variation (sample SD
over the mean) of the repeats; with fewer than 2 there is none. MLPerf Storage reports run-to-run CVs of
50-125% for KV-cache runs, which is why a figure is the median of several repeats and its spread is shown."""

from __future__ import annotations

import statistics
from typing import Any


def spread(values: list[float]) -> dict[str, Any]:
    """``{"median", "min", "max", "cv", "n"}`` of the repeats (``cv`` None below 2 or at a mean of 0)."""
    if not values:
        return {"median": None, "min": None, "max": None, "cv": None, "n": 0}
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 and mean > 0 else None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "cv": None if cv is None else round(cv, 4), "n": len(values)}  # fmt: skip


def medians(runs: list[dict[str, Any]], keys: list[str]) -> dict[str, Any]:
    """Each key's median over the runs that have it."""
    out: dict[str, Any] = {}
    for key in keys:
        got = [float(r[key]) for r in runs if isinstance(r.get(key), int | float)]
        out[key] = statistics.median(got) if got else None
    return out
