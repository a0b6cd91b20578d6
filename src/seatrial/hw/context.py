"""What one ``seatrial hw`` run's trials share: the config, the machine as probed, the GPUs chosen with the
driver's versions, the raw material kept beside the sheet, and what judges once every trial has run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seatrial.hw.env import HwEnv, cuda_index
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.hw import GpuInfo

if TYPE_CHECKING:
    import torch

    from seatrial.hw.models import HwConfig


@dataclass
class HwContext:
    """``artifacts``: written to artifacts.json (profiler traces, health readings); ``at_end``: judges a
    trial that watches the whole run (health), called after the last trial."""

    cfg: HwConfig
    env: HwEnv
    gpus: list[GpuInfo]
    versions: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)
    at_end: list[Callable[[], list[TrialResult]]] = field(default_factory=list)

    @property
    def selected(self) -> list[int]:
        return [g.index for g in self.gpus]

    def devices(self) -> dict[int, torch.device]:
        """torch's device of each chosen GPU, keyed by NVML index (imports torch: GPU trials only)."""
        import torch

        return {g.index: torch.device("cuda", cuda_index(self.env, g)) for g in self.gpus}
