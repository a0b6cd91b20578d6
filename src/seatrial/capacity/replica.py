"""A capacity a fresh replica holds, from searches on several fresh starts (issue 38 item 6).

Each start's search gives a lower bound of that start's capacity. Starts differ (the same engine, flags
and host start 5-10% faster or slower), so one start's bound says little of the next replica's. Over
``n`` starts the reported capacity is a one-sided lower prediction bound for one more start, on the log
scale (start-to-start speed is multiplicative): ``exp(mean - t(confidence, n - 1) * sd * sqrt(1 + 1/n))``
of the starts' log capacities (a normal model; ``benchmarks/replica_bound.py`` measures how often it is
at or below a fresh start's capacity). A start whose search found nothing is not dropped: its capacity
is below its lowest probe, so no bound can be given above that, and the replica's capacity is reported
as below the lowest such probe. One start gives its own bound, labelled "one start": there is no
spread to predict from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps


@dataclass(frozen=True)
class StartCapacity:
    found: float | None  # the start's capacity (lower bound of its search); None: its search found none
    lowest: float  # the lowest load its search probed


@dataclass(frozen=True)
class ReplicaBound:
    value: float | None  # the lower prediction bound (None: a start found nothing, or no start)
    below: float | None  # a start found nothing: a fresh replica's capacity may be below this
    method: str


def replica_bound(starts: list[StartCapacity], confidence: float) -> ReplicaBound:
    """The capacity a fresh replica holds at one-sided ``confidence`` (the module's docstring)."""
    missed = [s.lowest for s in starts if s.found is None]
    if missed:
        return ReplicaBound(None, min(missed), f"{len(missed)} of {len(starts)} starts found no capacity")
    logs = [math.log(s.found) for s in starts if s.found is not None]
    n = len(logs)
    if n == 0:
        return ReplicaBound(None, None, "no start")
    if n == 1:
        return ReplicaBound(math.exp(logs[0]), None, "one start")
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    t = float(sps.t.ppf(confidence, n - 1))
    value = math.exp(mean - t * sd * math.sqrt(1 + 1 / n))
    return ReplicaBound(
        value, None, f"lower {confidence:.0%} prediction bound over {n} starts (log scale, t with {n - 1} df)"
    )
