"""Every metric a run measures, declared once: its name (the key in ``summary.json``, ``requests.jsonl``
and an experiment plan), unit, direction, what one value is of, how a level summarises it, whether it can
bound a good request, and how a request's value is read.

Bench's level figures (:mod:`seatrial.load.metrics`), goodput's and capacity's SLO
(:mod:`seatrial.load.goodput`), an experiment's metrics and their direction (:mod:`seatrial.experiment.plan`),
the request values compare and experiment decide from (:mod:`seatrial.experiment.sources`) all read this
table; a metric added here is measured, summarised, decidable and comparable. Plain data: ``--help`` imports
it without numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

#: how a row is read: ``row.get`` of a requests.jsonl row, or an attribute getter of a RequestRecord
Getter = Callable[[str], Any]


def _field(name: str) -> Callable[[Getter], Any]:
    return lambda get: get(name)


def _per_user(get: Getter) -> float | None:
    """The speed one user saw: output tokens / E2E (a request with no count saw none)."""
    e2e = get("e2e_ms")
    return (get("output_tokens") or 0) / (e2e / 1000) if e2e else None


@dataclass(frozen=True)
class MetricDef:
    """One metric. ``of``: ``request`` (one value per request), ``gap`` (one per inter-token gap, a list per
    request) or ``level`` (one value per level: a rate over the level's duration). ``summary``: how a bench
    level reports it (``distribution``: mean and percentiles over its requests; ``mean``: their mean;
    ``rate``: one figure). ``slo``: whether a good request can be bounded by it (``ttft_ms:2000``)."""

    name: str
    unit: str
    higher_is_better: bool
    of: Literal["request", "gap", "level"]
    summary: Literal["distribution", "mean", "rate"]
    slo: bool = False
    read: Callable[[Getter], Any] | None = None  # a request's value (a gap metric: its list of gaps)

    def value(self, get: Getter) -> Any:
        """A request's value of this metric (None: it has none); ``get`` reads the request's fields."""
        return (self.read or _field(self.name))(get)


METRICS: dict[str, MetricDef] = {m.name: m for m in (
    MetricDef("ttft_ms", "ms", False, "request", "distribution", slo=True),
    MetricDef("ttfa_ms", "ms", False, "request", "distribution"),
    MetricDef("tpot_ms", "ms", False, "request", "distribution", slo=True),
    MetricDef("itl_ms", "ms", False, "gap", "distribution", read=lambda get: get("itl_ms") or []),
    MetricDef("e2e_ms", "ms", False, "request", "distribution", slo=True),
    MetricDef("per_user_output_tok_s", "tok/s", True, "request", "mean", read=_per_user),
    MetricDef("output_tok_s", "tok/s", True, "level", "rate"),
    MetricDef("total_tok_s", "tok/s", True, "level", "rate"),
    MetricDef("request_s", "req/s", True, "level", "rate"),
)}  # fmt: skip

#: the metrics with a value per request (or per gap), in the table's order
REQUEST_METRICS = tuple(m.name for m in METRICS.values() if m.of != "level")
#: the metrics with one value per level
LEVEL_METRICS = tuple(m.name for m in METRICS.values() if m.of == "level")
#: the metrics a bench level reports as a distribution
DISTRIBUTIONS = tuple(m.name for m in METRICS.values() if m.summary == "distribution")
#: the metrics a good request can be bounded by
SLO_METRICS = tuple(m.name for m in METRICS.values() if m.slo)


def lower_is_better(metric: str) -> bool:
    """Whether less is better for ``metric`` or ``metric.stat`` (``ttft_ms.p99``); an unknown name is a
    rate (higher is better), as a capacity is."""
    m = METRICS.get(metric.partition(".")[0])
    return m is not None and not m.higher_is_better
