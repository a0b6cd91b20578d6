"""The torch trials' wiring (precision, burn with telemetry, collectives), driven on CPU devices."""

from __future__ import annotations

from typing import Any

import torch

from seatrial.hw.context import HwContext
from seatrial.hw.env import HwEnv
from seatrial.hw.gpu_trials import _burn, _collectives, _precision
from seatrial.hw.models import HwConfig
from seatrial.hw.nvml import Nvml
from seatrial.hw.runner import run_trials
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib

CPU = torch.device("cpu")
CFG = HwConfig(duration_s=0.1, matmul_size=128, telemetry_interval_s=0.01)


def test_precision_keeps_traces_and_judges_each_gpu() -> None:
    artifacts: dict[str, Any] = {}
    results = _precision(
        "precision.bf16", CFG, {0: CPU, 1: CPU}, {0: "NVIDIA H200", 1: "NVIDIA H200"}, artifacts
    )
    assert [(r.name, r.gpu) for r in results] == [("precision.bf16", 0), ("precision.bf16", 1)]
    assert all(r.evidence["tflops_peak"] == 989.4 for r in results)
    assert all(r.verdict is Verdict.REVIEW_REQUIRED for r in results)  # CPU ops prove no GPU kernel
    assert set(artifacts["profiler_traces"]) == {"precision.bf16/gpu0", "precision.bf16/gpu1"}
    assert artifacts["profiler_traces"]["precision.bf16/gpu0"]["bf16"]


def test_burn_samples_telemetry_during_the_load() -> None:
    env = HwEnv(nvml=Nvml(lib=FakeNvmlLib(count=2), device_count=2), nvml_reason=None)  # type: ignore[arg-type]
    # two "GPUs" that are both the shared, busy CPU: their relative speed is noise, not a finding
    cfg = CFG.model_copy(update={"burn_min_share": 0.01})
    results = _burn(cfg, env, {0: CPU, 1: CPU})
    for r in results:
        assert r.verdict is Verdict.PASS, r.reason
        assert r.evidence["telemetry"]["clock_events_seen"]["sw_power_cap"] == len(r.evidence["samples"]) >= 2
        assert r.evidence["telemetry_unavailable"] == {
            "hbm_temp_c": "nvmlDeviceGetFieldValues: NVMLError_NotSupported: Not Supported"
        }


def test_burn_without_nvml_needs_review() -> None:
    env = HwEnv(nvml=None, nvml_reason="NVML could not start: x")
    (only,) = _burn(CFG, env, {0: CPU})
    assert only.verdict is Verdict.REVIEW_REQUIRED
    assert only.reason == "clock-event reasons unavailable: NVML could not start: x"


def test_collectives_need_two_gpus_and_no_cuda_makes_everything_unavailable() -> None:
    assert _collectives(CFG, {0: CPU}).verdict is Verdict.UNAVAILABLE
    env = HwEnv(nvml=None, nvml_reason="x", cuda_reason="torch 2.13.0+cpu sees no CUDA device")
    results = run_trials(HwContext(CFG, env, []), ["precision.fp8", "burn"])
    assert [(r.name, r.verdict, r.reason) for r in results] == [
        ("precision.fp8", Verdict.UNAVAILABLE, "torch 2.13.0+cpu sees no CUDA device"),
        ("burn", Verdict.UNAVAILABLE, "torch 2.13.0+cpu sees no CUDA device"),
    ]
