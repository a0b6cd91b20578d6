"""inventory and telemetry sampling through the NVML layer (fake NVML with the H200's values)."""

from __future__ import annotations

import time

from seatrial.hw.inventory import judge_inventory, read_gpu_info, read_versions
from seatrial.hw.nvml import Nvml
from seatrial.hw.telemetry import TelemetrySampler, sample_once
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib, NVMLError_NoPermission, NVMLError_NotSupported


def nvml(**readings: object) -> Nvml:
    return Nvml(lib=FakeNvmlLib(**readings), device_count=1)  # type: ignore[arg-type]


def test_gpu_info_reads_identity_link_and_modes() -> None:
    info = read_gpu_info(nvml(), 0)
    assert (info.name, info.compute_capability, info.memory_total_bytes) == (
        "NVIDIA H200",
        "9.0",
        150754820096,
    )
    assert (info.pcie_gen_current, info.pcie_width_max, info.virtualization_mode) == (5, 16, "passthrough")
    assert info.mig_mode_current is False and info.unavailable == {}
    assert read_versions(nvml()) == {"driver_version": "580.159.04", "cuda_driver_version": "13.0"}


def test_unreadable_inventory_fields_are_none_with_the_reason() -> None:
    info = read_gpu_info(nvml(mig=NVMLError_NotSupported, cc=NVMLError_NoPermission), 0)
    assert info.mig_mode_current is None and info.compute_capability is None
    assert info.unavailable == {
        "mig_mode": "nvmlDeviceGetMigMode: NVMLError_NotSupported: Not Supported",
        "compute_capability": "nvmlDeviceGetCudaComputeCapability: "
        "NVMLError_NoPermission: Insufficient Permissions",
    }


def test_inventory_passes_at_or_above_the_expected_count() -> None:
    gpus = [read_gpu_info(nvml(), 0)]
    assert judge_inventory(1, gpus, {}, 1).verdict is Verdict.PASS
    assert judge_inventory(1, gpus, {}, None).verdict is Verdict.PASS
    failed = judge_inventory(1, gpus, {}, 8)
    assert (
        failed.verdict is Verdict.FAIL
        and failed.evidence["count"] == 1
        and failed.evidence["expect_gpus"] == 8
    )


def test_sample_converts_units_and_keeps_unavailable_fields() -> None:
    sample = sample_once(nvml(), 0)
    assert sample["power_w"] == 613.626 and sample["power_limit_w"] == 700.0
    assert sample["sm_clock_mhz"] == 1965 and sample["clock_event_reasons"] == 4
    assert sample["hbm_temp_c"].reason.startswith("nvmlDeviceGetFieldValues")


def test_sampler_records_until_stopped_and_reports_missing_fields_once() -> None:
    with TelemetrySampler(nvml(), [0], interval_s=0.01) as sampler:
        time.sleep(0.1)
    samples = sampler.samples[0]
    assert len(samples) >= 2 and all(s["hbm_temp_c"] is None for s in samples)
    assert [s["t_s"] for s in samples] == sorted(s["t_s"] for s in samples)
    assert list(sampler.unavailable[0]) == ["hbm_temp_c"]
