"""Statistics of seatrial, in one package tested alone: distribution summaries, percentiles and medians
with intervals, paired differences, effects between settings over fresh starts, and power.

Nothing here knows about HTTP, servers or verdict words: callers pass numbers and get estimates.
"""

from seatrial.stats.distribution import PERCENTILES, distribution, median
from seatrial.stats.intervals import (
    CONFIDENCE,
    TAIL_SAMPLES,
    Estimate,
    bootstrap,
    direction_consistency,
    median_ci,
    min_samples,
    percentile_ci,
    quantile_ranks,
    relative_differences_pct,
    tail_count,
)

__all__ = [
    "CONFIDENCE",
    "PERCENTILES",
    "TAIL_SAMPLES",
    "Estimate",
    "bootstrap",
    "direction_consistency",
    "distribution",
    "median",
    "median_ci",
    "min_samples",
    "percentile_ci",
    "quantile_ranks",
    "relative_differences_pct",
    "tail_count",
]
