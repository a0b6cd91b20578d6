"""Distribution summaries used by every level and trial (numpy's linear percentiles, as vLLM's benchmark)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PERCENTILES = (50, 90, 95, 99)


def distribution(values: Sequence[float]) -> dict[str, float | None]:
    """``{mean, p50, p90, p95, p99, max}`` of ``values``; all None when there is no value."""
    if len(values) == 0:
        return {"mean": None, **{f"p{p}": None for p in PERCENTILES}, "max": None}
    arr = np.asarray(values, dtype=np.float64)
    out: dict[str, float | None] = {"mean": float(arr.mean())}
    for p, v in zip(PERCENTILES, np.percentile(arr, PERCENTILES), strict=True):
        out[f"p{p}"] = float(v)
    out["max"] = float(arr.max())
    return out


def median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None
