"""Typed configuration and results of ``seatrial hw``.

The JSON contract (issue 6, item 7) is ``{"gpus": [...], "trials": [{"name", "gpu", "verdict",
"reason"?, "evidence": {...}}], "passed", "not_measured", "counts"}``: ``gpu`` is null for a trial over
several GPUs and ``reason`` is present only when the verdict needs one (the trial rows are
:class:`seatrial.runs.TrialResult`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import judge_run

#: Every trial name, in the order a run executes them (health is judged at the end of the run).
TRIAL_NAMES: tuple[str, ...] = (
    "inventory",
    "health",
    "dcgm",
    "precision.bf16",
    "precision.fp8",
    "precision.fp4",
    "burn",
    "collectives",
)

#: The sub-trials ``health`` expands to, one verdict each per GPU.
HEALTH_PARTS: tuple[str, ...] = ("ecc", "retired_pages", "row_remap", "xid", "nvlink", "pcie")


class HwConfig(BaseModel):
    """What one ``seatrial hw`` run does. ``gpus`` None means every visible GPU."""

    model_config = ConfigDict(extra="forbid")

    gpus: list[int] | None = None
    trials: list[str] = Field(default_factory=lambda: list(TRIAL_NAMES))
    duration_s: float = Field(default=60.0, gt=0)
    expect_gpus: int | None = Field(default=None, ge=1)
    dcgm_level: int = Field(default=2, ge=1, le=4)
    burn_min_share: float = Field(default=0.9, gt=0, le=1)
    matmul_size: int = Field(default=8192, ge=64)
    telemetry_interval_s: float = Field(default=1.0, gt=0)
    collective_max_bytes: int = Field(default=1 << 30, ge=1 << 10)


class GpuInfo(BaseModel):
    """One GPU as NVML (or, without NVML, torch) describes it. None means the reading was unavailable."""

    model_config = ConfigDict(extra="forbid")

    index: int
    name: str
    uuid: str | None = None
    compute_capability: str | None = None
    memory_total_bytes: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    virtualization_mode: str | None = None
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    unavailable: dict[str, str] = Field(default_factory=dict)


class HwReport(BaseModel):
    """The whole verdict sheet of one run. ``environment`` (versions) goes to run.json, not to the
    sheet's JSON, which is exactly ``{"gpus", "trials"}``."""

    model_config = ConfigDict(extra="forbid")

    gpus: list[GpuInfo]
    trials: list[TrialResult]
    environment: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> HwReport:
        """Read back a sheet written by :meth:`to_json` (e.g. a run folder's summary.json)."""
        return cls(gpus=doc["gpus"], trials=[TrialResult.model_validate(t) for t in doc["trials"]])

    def to_json(self, require: list[str] | None = None) -> dict[str, Any]:
        """The sheet, with what its verdicts add up to (:func:`seatrial.runs.judge_run`)."""
        judged = judge_run(self.trials, require or [])
        return {
            "gpus": [g.model_dump(mode="json") for g in self.gpus],
            "trials": [t.to_json() for t in self.trials],
            **{k: judged[k] for k in ("passed", "not_measured", "counts", "missing_required")},
        }


def expand_trials(names: list[str]) -> list[str]:
    """Expand group names (``precision`` -> every ``precision.*``), keeping run order.

    An unknown name raises ValueError."""
    chosen: set[str] = set()
    for name in names:
        matches = [t for t in TRIAL_NAMES if t == name or t.startswith(name + ".")]
        if not matches:
            raise ValueError(f"unknown trial {name!r}; known: {', '.join(TRIAL_NAMES)}")
        chosen.update(matches)
    return [t for t in TRIAL_NAMES if t in chosen]
