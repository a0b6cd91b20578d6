"""What the machine offers the trials: NVML, and torch with CUDA, each with the reason when absent."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

from seatrial.hw.nvml import INSTALL_HINT, Nvml, load_nvml
from seatrial.runs.summaries.hw import GpuInfo


@dataclass
class HwEnv:
    """NVML (or the reason it is missing) and torch's CUDA devices keyed by NVML index (or the reason)."""

    nvml: Nvml | None
    nvml_reason: str | None
    cuda_count: int = 0
    cuda_reason: str | None = None
    cuda_uuids: list[str] = field(default_factory=list)
    versions: dict[str, Any] = field(default_factory=dict)

    @property
    def device_count(self) -> int:
        return self.nvml.device_count if self.nvml is not None else self.cuda_count


def probe() -> HwEnv:
    """Look for NVML and for torch with CUDA; never raises."""
    nvml, nvml_reason = load_nvml()
    env = HwEnv(nvml=nvml, nvml_reason=nvml_reason, versions={"python": platform.python_version()})
    try:
        import torch
    except ImportError:
        env.cuda_reason = f"torch is not installed ({INSTALL_HINT})"
        return env
    env.versions["torch"] = torch.__version__
    env.versions["torch_cuda"] = torch.version.cuda
    if not torch.cuda.is_available():
        env.cuda_reason = f"torch {torch.__version__} sees no CUDA device"
        return env
    env.cuda_count = torch.cuda.device_count()
    env.cuda_uuids = [
        str(getattr(torch.cuda.get_device_properties(i), "uuid", "")) for i in range(env.cuda_count)
    ]
    return env


def cuda_index(env: HwEnv, gpu: GpuInfo) -> int:
    """torch's index of the GPU NVML calls ``gpu`` (matched by UUID; same index when UUIDs are unknown)."""
    if gpu.uuid:
        bare = gpu.uuid.removeprefix("GPU-")
        for i, uuid in enumerate(env.cuda_uuids):
            if uuid and uuid.removeprefix("GPU-") == bare:
                return i
    return gpu.index
