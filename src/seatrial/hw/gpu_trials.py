"""The trials that need torch with CUDA: precision paths, burn, collectives."""

from __future__ import annotations

from typing import Any

import torch

from seatrial.hw.burn import run_burn
from seatrial.hw.burn_judge import judge_burn
from seatrial.hw.collectives import message_sizes, run_collectives
from seatrial.hw.collectives_judge import judge_collectives, unavailable_collectives
from seatrial.hw.env import HwEnv, cuda_index
from seatrial.hw.models import GpuInfo, HwConfig
from seatrial.hw.peaks import peak_tflops
from seatrial.hw.precision import run_precision
from seatrial.hw.precision_judge import FORMATS, judge_error, judge_precision
from seatrial.hw.telemetry import TelemetrySampler
from seatrial.runs.result import TrialResult, because
from seatrial.verdict import Verdict

COLLECTIVE_MIN_BYTES = 1 << 20


def run_gpu_trials(
    cfg: HwConfig, env: HwEnv, gpus: list[GpuInfo], trials: list[str], artifacts: dict[str, Any]
) -> list[TrialResult]:
    """Run each of ``trials`` over ``gpus``; without CUDA each is UNAVAILABLE with torch's reason."""
    if env.cuda_reason is not None:
        return [
            TrialResult(name=t, gpu=None, verdict=Verdict.UNAVAILABLE, reasons=because(env.cuda_reason))
            for t in trials
        ]
    devices = {g.index: torch.device("cuda", cuda_index(env, g)) for g in gpus}
    names = {g.index: g.name for g in gpus}
    results: list[TrialResult] = []
    for trial in trials:
        if trial.startswith("precision."):
            results.extend(_precision(trial, cfg, devices, names, artifacts))
        elif trial == "burn":
            results.extend(_burn(cfg, env, devices))
        elif trial == "collectives":
            results.append(_collectives(cfg, devices))
    return results


def _precision(
    trial: str,
    cfg: HwConfig,
    devices: dict[int, torch.device],
    names: dict[int, str],
    artifacts: dict[str, Any],
) -> list[TrialResult]:
    raw = run_precision(trial, devices, cfg.matmul_size, cfg.duration_s)
    traces = artifacts.setdefault("profiler_traces", {})
    results = []
    for gpu, outcome in sorted(raw.items()):
        if isinstance(outcome, BaseException):
            results.append(judge_error(trial, gpu, outcome))
            continue
        traces[f"{trial}/gpu{gpu}"] = {v["variant"]: v.get("trace", []) for v in outcome}
        results.append(judge_precision(trial, gpu, outcome, peak_tflops(names[gpu], FORMATS[trial])))
    return results


def _burn(cfg: HwConfig, env: HwEnv, devices: dict[int, torch.device]) -> list[TrialResult]:
    if env.nvml is None:
        raw = run_burn(devices, cfg.matmul_size, cfg.duration_s)
        samples: dict[int, list[dict[str, Any]]] = {g: [] for g in devices}
        missing = {g: {"clock_event_reasons": env.nvml_reason or "NVML unavailable"} for g in devices}
    else:
        with TelemetrySampler(env.nvml, list(devices), cfg.telemetry_interval_s) as sampler:
            raw = run_burn(devices, cfg.matmul_size, cfg.duration_s)
        samples, missing = sampler.samples, sampler.unavailable
    best = max((r["tflops"] for r in raw.values() if not isinstance(r, BaseException)), default=0.0)
    return [
        judge_error("burn", gpu, r)
        if isinstance(r, BaseException)
        else judge_burn(gpu, r, samples[gpu], missing[gpu], best, cfg.burn_min_share)
        for gpu, r in sorted(raw.items())
    ]


def _collectives(cfg: HwConfig, devices: dict[int, torch.device]) -> TrialResult:
    if len(devices) < 2:
        return unavailable_collectives(len(devices))
    sizes = message_sizes(COLLECTIVE_MIN_BYTES, cfg.collective_max_bytes)
    cuda_ids = [d.index for _, d in sorted(devices.items()) if d.index is not None]
    try:
        rows = run_collectives(len(devices), "nccl", sizes, cuda_ids)
    except RuntimeError as exc:
        return judge_error("collectives", None, exc)
    return judge_collectives(rows, len(devices), "nccl")
