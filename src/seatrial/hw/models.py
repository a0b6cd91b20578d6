"""Typed configuration and results of ``seatrial hw``.

The JSON contract (issue 6, item 7) is ``{"gpus": [...], "trials": [{"name", "gpu", "verdict",
"reason"?, "evidence": {...}}], "passed", "not_measured", "counts"}``: ``gpu`` is null for a trial over
several GPUs and ``reason`` is present only when the verdict needs one. Its model is
:class:`seatrial.runs.summaries.hw.HwSummary` (the trial rows are :class:`seatrial.runs.TrialResult`); the
trials themselves are seatrial.hw.registry's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from seatrial.hw.registry import HW_TRIALS, TRIAL_NAMES
from seatrial.runs.summaries.hw import GpuInfo, HwSummary

__all__ = ["TRIAL_NAMES", "GpuInfo", "HwConfig", "HwReport", "expand_trials"]


class HwConfig(BaseModel):
    """What one ``seatrial hw`` run does. ``gpus`` None means every visible GPU."""

    model_config = ConfigDict(extra="forbid")

    gpus: list[int] | None = None
    trials: list[str] = Field(default_factory=lambda: list(HW_TRIALS))
    duration_s: float = Field(default=60.0, gt=0)
    expect_gpus: int | None = Field(default=None, ge=1)
    dcgm_level: int = Field(default=2, ge=1, le=4)
    burn_min_share: float = Field(default=0.9, gt=0, le=1)
    matmul_size: int = Field(default=8192, ge=64)
    telemetry_interval_s: float = Field(default=1.0, gt=0)
    collective_max_bytes: int = Field(default=1 << 32, ge=1 << 10)  # 1 MiB .. 4 GiB, as issue 43 asks
    #: a figure more than this share below its reference: a GPU below the median of the host's like GPUs
    #: (seatrial.hw.fleet), a collective's busbw below the best smaller group's (seatrial.hw.collectives_judge)
    fleet_margin: float = Field(default=0.10, gt=0, lt=1)


class HwReport(HwSummary):
    """One run's sheet as the runner made it, with the versions it read (``environment``: for run.json,
    never in the sheet's JSON); :meth:`to_json` judges it first."""

    environment: dict[str, Any] = Field(default_factory=dict, exclude=True)

    def to_json(self, require: list[str] | None = None) -> dict[str, Any]:
        """The sheet with what its verdicts add up to (:func:`seatrial.runs.judge_run`; ``require``: trials
        that must be measured)."""
        return HwSummary.to_json(self.judged(self.trials, require or []))


def expand_trials(names: list[str]) -> list[str]:
    """Expand group names (``precision`` -> every ``precision.*``), keeping run order.

    An unknown name raises ValueError."""
    chosen: set[str] = set()
    for name in names:
        matches = [t for t in HW_TRIALS if t == name or t.startswith(name + ".")]
        if not matches:
            raise ValueError(f"unknown trial {name!r}; known: {', '.join(HW_TRIALS)}")
        chosen.update(matches)
    return [t for t in HW_TRIALS if t in chosen]
