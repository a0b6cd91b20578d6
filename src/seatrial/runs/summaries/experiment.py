"""``seatrial experiment`` summary: the schedule, every setting's starts (each start's levels are bench's
``LevelSummary``), the per-level statistics over starts, and one decision per treatment and profile.

Free-form parts stay dicts: the conditions a start ran under (host, GPUs, engine), a level's statistics
per metric, the A/A checks and the drift rows."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.bench import LevelSummary


class StartCapacity(SummaryModel):
    """One capacity profile's search on one start's server (``capacity-<profile>/``)."""

    value: float | None
    reason: str | None = None
    unit: Literal["req/s", "users"] | None = None
    bracket: list[float | None] | None = None
    line: str | None = None
    lowest: float | None = None  # its lowest probe: a search that found nothing is below it


class ExperimentStart(SummaryModel):
    """One fresh server start of a setting: its attempts to come up, its measured levels, how it stopped."""

    index: int
    folder: str
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    ok: bool | None = None
    done: bool | None = None
    error: str | None = None
    seed: int | None = None  # its prompts' and arrivals' seed: the experiment's + its start index
    startup_s: float | None = None
    kv_cache_line: str | None = None
    nice: int | None = None  # the nice its threads were lowered to once ready (serve.nice)
    levels: list[LevelSummary] = Field(default_factory=list)
    plan_check: dict[str, Any] | None = None
    spans: dict[str, Any] | None = None
    capacity: dict[str, StartCapacity] | None = None
    stop: dict[str, Any] | None = None


class SettingLevel(SummaryModel):
    """One level of one setting over its valid starts: per metric, per-start values and their spread."""

    concurrency: int
    valid_starts: int
    stats: dict[str, dict[str, Any]]
    stalled_starts: list[int] = Field(default_factory=list)


class ExperimentSetting(SummaryModel):
    name: str
    args: list[str]
    env: dict[str, str]
    role: Literal["baseline", "treatment"]
    aa_control: bool
    differences: list[str]
    starts: list[ExperimentStart]
    levels: list[SettingLevel] = Field(default_factory=list)


class GuardrailCheck(SummaryModel):
    metric: str
    margin_pct: float
    gain_pct: float | None
    ci_pct: list[float | None]
    method: str
    starts: list[int]
    status: Literal["NON_INFERIOR", "WORSE", "UNDECIDED"]
    reasons: list[str]


class Decision(SummaryModel):
    """One treatment against the baseline at one profile, in a verdict word with its interval."""

    treatment: str
    aa_control: bool
    profile: str
    concurrency: int
    verdict: str | None
    metric: str
    key: str
    higher_is_better: bool
    gain_pct: float | None
    ci_pct: list[float | None]
    method: str
    confidence: float
    plan_confidence: float
    holm: dict[str, Any] | None
    threshold_pct: float
    min_gain_pct: float
    guardrails: list[GuardrailCheck]
    starts: dict[str, int]
    pooled_n: dict[str, int | None]
    sd_log: float | None
    reasons: list[str]
    excluded: list[str]
    failed_starts: list[str]
    power_starts_needed: int | None
    power: dict[str, Any]
    invalid: list[str] | None = None


class ExperimentSummary(SummaryModel):
    plan_sha256: str
    seed: int | None
    schedule: list[dict[str, Any]]
    settings: list[ExperimentSetting]
    decisions: list[Decision] = Field(default_factory=list)
    complete: bool
    conditions: dict[str, Any] | None = None
    aa_checks: list[dict[str, Any]] = Field(default_factory=list)
    drift: list[dict[str, Any]] = Field(default_factory=list)
    multiplicity: str | None = None
    warnings: list[str] = Field(default_factory=list)
    invalid_levels: list[dict[str, Any]] = Field(default_factory=list)
    failed_starts: list[dict[str, Any]] = Field(default_factory=list)
    failed_settings: list[str] = Field(default_factory=list)
    interrupted: bool | None = None
    resumed_despite: list[dict[str, Any]] | None = None
