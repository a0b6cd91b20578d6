"""One ``seatrial hw`` run: probe the machine, run the selected trials in order, judge, collect evidence.

Health counters are read before the first trial and after the last, and XID events are watched for
the whole run, so the ``health.*`` verdicts cover everything the run did to the GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seatrial.errors import ConfigError
from seatrial.hw.dcgm import run_dcgm
from seatrial.hw.env import HwEnv, probe
from seatrial.hw.health import read_health
from seatrial.hw.health_judge import judge_health
from seatrial.hw.inventory import judge_inventory, read_gpu_info, read_versions
from seatrial.hw.models import (
    HEALTH_PARTS,
    TRIAL_NAMES,
    GpuInfo,
    HwConfig,
    HwReport,
    expand_trials,
)
from seatrial.hw.xid import XidWatcher
from seatrial.runs.result import TrialResult, because
from seatrial.verdict import Verdict


@dataclass
class HwRun:
    """The verdict sheet and the raw material behind it (profiler traces, health readings)."""

    report: HwReport
    artifacts: dict[str, Any] = field(default_factory=dict)


def unavailable(name: str, reason: str) -> TrialResult:
    return TrialResult(name=name, gpu=None, verdict=Verdict.UNAVAILABLE, reasons=because(reason))


def _names(trials: list[str]) -> list[str]:
    """Trial names as they appear on the sheet (``health`` becomes its parts)."""
    return [f"health.{p}" for p in HEALTH_PARTS] if trials == ["health"] else trials


def no_gpu_report(trials: list[str], env: HwEnv) -> HwReport:
    """Every selected trial UNAVAILABLE with the reason no GPU could be used."""
    reason = "no GPU found: " + "; ".join(r for r in (env.nvml_reason, env.cuda_reason) if r)
    rows = [unavailable(n, reason) for t in trials for n in _names([t])]
    return HwReport(gpus=[], trials=rows, environment=env.versions)


def select_gpus(requested: list[int] | None, count: int) -> list[int]:
    if requested is None:
        return list(range(count))
    missing = [i for i in requested if i >= count]
    if missing:
        raise ConfigError(f"--gpus: GPU {missing[0]} does not exist; {count} visible (0..{count - 1})")
    return sorted(set(requested))


def _gpu_infos(env: HwEnv, selected: list[int]) -> list[GpuInfo]:
    if env.nvml is not None:
        return [read_gpu_info(env.nvml, i) for i in selected]
    import torch

    return [GpuInfo(index=i, name=torch.cuda.get_device_name(i)) for i in selected]


def run_hw(cfg: HwConfig) -> HwRun:
    """Run ``cfg.trials`` on ``cfg.gpus``; see the module doc for the order."""
    try:
        trials = expand_trials(cfg.trials)
    except ValueError as exc:
        raise ConfigError(f"--trials: {exc}") from None
    env = probe()
    if env.device_count == 0:
        return HwRun(no_gpu_report(trials, env))
    selected = select_gpus(cfg.gpus, env.device_count)
    gpus = _gpu_infos(env, selected)
    results: list[TrialResult] = []
    artifacts: dict[str, Any] = {}
    versions = read_versions(env.nvml) if env.nvml is not None else {}
    if "inventory" in trials:
        if env.nvml is None:
            results.append(unavailable("inventory", env.nvml_reason or "NVML unavailable"))
        else:
            results.append(judge_inventory(env.device_count, gpus, versions, cfg.expect_gpus))
    watch = _start_health(env, selected) if "health" in trials else None
    if "dcgm" in trials:
        results.extend(run_dcgm(cfg.dcgm_level))
    from seatrial.hw.gpu_trials import run_gpu_trials

    results.extend(run_gpu_trials(cfg, env, gpus, [t for t in trials if t in _GPU_TRIALS], artifacts))
    if "health" in trials:
        results.extend(_finish_health(env, selected, watch, artifacts))
    order = {name: n for n, name in enumerate(TRIAL_NAMES)}
    results.sort(key=lambda r: order.get(r.name, order.get(r.name.split(".")[0], len(order))))
    report = HwReport(gpus=gpus, trials=results, environment={**env.versions, **versions})
    return HwRun(report, artifacts)


_GPU_TRIALS = ("precision.bf16", "precision.fp8", "precision.fp4", "burn", "collectives")


def _start_health(env: HwEnv, selected: list[int]) -> tuple[dict[int, Any], XidWatcher] | None:
    if env.nvml is None:
        return None
    return {i: read_health(env.nvml, i) for i in selected}, XidWatcher(env.nvml, selected)


def _finish_health(
    env: HwEnv,
    selected: list[int],
    watch: tuple[dict[int, Any], XidWatcher] | None,
    artifacts: dict[str, Any],
) -> list[TrialResult]:
    if env.nvml is None or watch is None:
        return [unavailable(f"health.{p}", env.nvml_reason or "NVML unavailable") for p in HEALTH_PARTS]
    start, watcher = watch
    xids = watcher.stop()
    end = {i: read_health(env.nvml, i) for i in selected}
    artifacts["health_readings"] = {
        str(i): {"start": start[i], "end": end[i], "xid": xids[i]} for i in selected
    }
    return [r for i in selected for r in judge_health(i, start[i], end[i], xids[i])]
