"""``inventory``: which GPUs are there, as NVML describes them, how they are joined (``nvidia-smi topo -m``,
seatrial.hw.topology), and whether the count is right."""

from __future__ import annotations

from typing import Any

from seatrial.hw.nvml import Nvml, Unavailable, read
from seatrial.runs.result import TrialResult, because
from seatrial.runs.summaries.hw import GpuInfo
from seatrial.runs.verdicts import Verdict

#: NVML's nvmlGpuVirtualizationMode_t values.
VIRTUALIZATION_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}


def read_gpu_info(nvml: Nvml, index: int) -> GpuInfo:
    """Read one GPU's identity, memory, PCIe link, virtualization and MIG mode."""
    lib, h = nvml.lib, nvml.handle(index)
    raw: dict[str, Any] = {
        "name": read(lib.nvmlDeviceGetName, h),
        "uuid": read(lib.nvmlDeviceGetUUID, h),
        "compute_capability": read(lib.nvmlDeviceGetCudaComputeCapability, h),
        "memory_total_bytes": read(lib.nvmlDeviceGetMemoryInfo, h),
        "pcie_gen_current": read(lib.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_gen_max": read(lib.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "pcie_width_current": read(lib.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_width_max": read(lib.nvmlDeviceGetMaxPcieLinkWidth, h),
        "virtualization_mode": read(lib.nvmlDeviceGetVirtualizationMode, h),
        "mig_mode": read(lib.nvmlDeviceGetMigMode, h),
        "power_limit_mw": read(lib.nvmlDeviceGetEnforcedPowerLimit, h),
    }
    return gpu_info_from_readings(index, raw)


def gpu_info_from_readings(index: int, raw: dict[str, Any]) -> GpuInfo:
    """Build GpuInfo from raw NVML readings; unavailable ones become None plus a reason."""
    missing = {k: v.reason for k, v in raw.items() if isinstance(v, Unavailable)}
    ok = {k: v for k, v in raw.items() if not isinstance(v, Unavailable)}
    cc = ok.get("compute_capability")
    mem = ok.get("memory_total_bytes")
    mig = ok.get("mig_mode")
    virt = ok.get("virtualization_mode")
    power = ok.get("power_limit_mw")
    return GpuInfo(
        index=index,
        name=_text(ok.get("name", "unknown")),
        uuid=_text(ok["uuid"]) if "uuid" in ok else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
        memory_total_bytes=int(getattr(mem, "total", mem)) if mem is not None else None,
        pcie_gen_current=ok.get("pcie_gen_current"),
        pcie_gen_max=ok.get("pcie_gen_max"),
        pcie_width_current=ok.get("pcie_width_current"),
        pcie_width_max=ok.get("pcie_width_max"),
        virtualization_mode=VIRTUALIZATION_MODES.get(int(virt), str(virt)) if virt is not None else None,
        mig_mode_current=bool(mig[0]) if mig is not None else None,
        mig_mode_pending=bool(mig[1]) if mig is not None else None,
        power_limit_w=power / 1000.0 if power is not None else None,
        unavailable=missing,
    )


def read_versions(nvml: Nvml) -> dict[str, Any]:
    """Driver version and the CUDA version the driver supports (e.g. 13000 -> '13.0')."""
    driver = read(nvml.lib.nvmlSystemGetDriverVersion)
    cuda = read(nvml.lib.nvmlSystemGetCudaDriverVersion_v2)
    return {
        "driver_version": _text(driver) if not isinstance(driver, Unavailable) else None,
        "cuda_driver_version": None
        if isinstance(cuda, Unavailable)
        else f"{cuda // 1000}.{cuda % 1000 // 10}",
    }


def judge_inventory(
    visible: int,
    selected: list[GpuInfo],
    versions: dict[str, Any],
    expect_gpus: int | None,
    topology: tuple[dict[str, Any] | None, str | None] = (None, None),
) -> TrialResult:
    """PASS when at least ``expect_gpus`` GPUs are visible (any count when not given), else FAIL.
    ``topology``: the matrix read (seatrial.hw.topology.read_topology), or None and why not; evidence only."""
    evidence = {
        "count": visible,
        "expect_gpus": expect_gpus,
        **versions,
        "selected": [g.index for g in selected],
        "topology": topology[0],
    }
    if topology[1] is not None:
        evidence["topology_unavailable"] = topology[1]
    if expect_gpus is not None and visible < expect_gpus:
        reason = f"{visible} GPU(s) visible, {expect_gpus} expected (--expect-gpus)"
        return TrialResult(
            name="inventory", gpu=None, verdict=Verdict.FAIL, reasons=because(reason), evidence=evidence
        )
    return TrialResult(name="inventory", gpu=None, verdict=Verdict.PASS, evidence=evidence)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
