"""The trials that need torch with CUDA: precision paths, burn, collectives. Torch (and the modules that
load it) is imported when one of them runs, never by importing this module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seatrial.hw.collectives_judge import judge_collectives, unavailable_collectives
from seatrial.hw.context import HwContext
from seatrial.hw.env import HwEnv
from seatrial.hw.peaks import peak_tflops
from seatrial.hw.telemetry import TelemetrySampler
from seatrial.runs.result import TrialResult

if TYPE_CHECKING:
    import torch

    from seatrial.hw.models import HwConfig

COLLECTIVE_MIN_BYTES = 1 << 20


def precision(ctx: HwContext, trial: str) -> list[TrialResult]:
    """``precision.<format>`` on every chosen GPU."""
    names = {g.index: g.name for g in ctx.gpus}
    return _precision(trial, ctx.cfg, ctx.devices(), names, ctx.artifacts)


def burn(ctx: HwContext, trial: str) -> list[TrialResult]:
    return _burn(ctx.cfg, ctx.env, ctx.devices())


def collectives(ctx: HwContext, trial: str) -> list[TrialResult]:
    return [_collectives(ctx.cfg, ctx.devices())]


def _precision(
    trial: str,
    cfg: HwConfig,
    devices: dict[int, torch.device],
    names: dict[int, str],
    artifacts: dict[str, Any],
) -> list[TrialResult]:
    from seatrial.hw.precision import run_precision
    from seatrial.hw.precision_judge import FORMATS, judge_error, judge_precision

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
    from seatrial.hw.burn import run_burn
    from seatrial.hw.burn_judge import judge_burn
    from seatrial.hw.precision_judge import judge_error

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
    from seatrial.hw.collectives import message_sizes, run_collectives
    from seatrial.hw.precision_judge import judge_error

    sizes = message_sizes(COLLECTIVE_MIN_BYTES, cfg.collective_max_bytes)
    cuda_ids = [d.index for _, d in sorted(devices.items()) if d.index is not None]
    try:
        rows = run_collectives(len(devices), "nccl", sizes, cuda_ids)
    except RuntimeError as exc:
        return judge_error("collectives", None, exc)
    return judge_collectives(rows, len(devices), "nccl", cfg.fleet_margin)
