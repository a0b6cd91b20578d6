"""``seatrial compare`` summary: runs level by level in verdict words, and named deployments (seed 001's
per-phase table with intervals, a 2 x 2's factors, capacities at the SLO)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from seatrial.runs.summaries.base import SummaryModel


class MetricComparison(SummaryModel):
    """One metric of one level: the candidate against the baseline in verdict words."""

    metric: str
    baseline: float | None
    candidate: float | None
    pooled_n: list[int | None]
    ratio: float | None
    gain_pct: float | None
    ci_pct: list[float | None]
    method: str
    interval: Literal["within run", "between starts"] | None
    starts: list[int]
    verdict: str
    reasons: list[str]


class LevelComparison(SummaryModel):
    workload: str
    level: str
    baseline: str
    candidate: str
    metrics: list[MetricComparison]


class RatioCell(SummaryModel):
    """A ratio of geometric means with its interval and the starts behind each side."""

    ratio: float | None
    ci: list[float | None]
    starts: list[int]


class PhaseRow(SummaryModel):
    """Two deployments at one workload kind and level: the first's speed over the second's."""

    workload: str
    level: str
    prompt_tok_s: RatioCell
    decode_speed: RatioCell
    output_tok_s: RatioCell


class FactorRow(SummaryModel):
    """A 2 x 2's factor (precision, topology or their interaction) at one workload kind and level."""

    workload: str
    level: str
    measure: str
    factor: Literal["precision", "topology", "interaction"]
    ratio: float | None
    ci: list[float | None]
    starts: list[int]


class CapacityRow(SummaryModel):
    deployment: str
    mode: Literal["rate", "concurrency"]
    slo: dict[str, float]
    attainment: float
    capacity: float | None
    found: bool
    per_gpu: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None


class Capacities(SummaryModel):
    rows: list[CapacityRow]
    comparable: bool
    reason: str | None
    note: str


class DeploymentComparison(SummaryModel):
    names: list[str]
    design: Literal["pair", "2x2"]
    precisions: list[str] | None = None
    topologies: list[str] | None = None
    phases: list[PhaseRow] = Field(default_factory=list)
    split: list[FactorRow] | None = None
    confounded: str | None = None
    capacity: Capacities


class CompareSummary(SummaryModel):
    mode: Literal["runs", "deployments"]
    threshold_pct: float
    runs: list[str]
    comparisons: list[LevelComparison]
    reference: str | None = None
    workload: str | None = None
    deployment: DeploymentComparison | None = None
