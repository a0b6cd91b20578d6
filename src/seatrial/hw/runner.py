"""One ``seatrial hw`` run: probe the machine, run the selected trials in order, judge, collect evidence.

Health counters are read before the first trial and after the last, and XID events are watched for
the whole run, so the ``health.*`` verdicts cover everything the run did to the GPUs. Each row a trial
returns carries the trial's wall time in ``evidence.trial_wall_s`` (a trial runs on every selected GPU at
once, so one time covers them all). With 3 or more GPUs the fleet rule judges each GPU's figures against
the median of the host's like GPUs (seatrial.hw.fleet.host_verdicts: the ``fleet.*`` rows).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from seatrial.errors import ConfigError
from seatrial.hw.context import HwContext
from seatrial.hw.env import HwEnv, probe
from seatrial.hw.fleet import host_verdicts
from seatrial.hw.host_trials import unavailable
from seatrial.hw.inventory import read_gpu_info, read_versions
from seatrial.hw.models import GpuInfo, HwConfig, HwReport, expand_trials
from seatrial.hw.registry import HW_TRIALS
from seatrial.runs.result import TrialResult


@dataclass
class HwRun:
    """The verdict sheet and the raw material behind it (profiler traces, health readings)."""

    report: HwReport
    artifacts: dict[str, Any] = field(default_factory=dict)


def no_gpu_report(trials: list[str], env: HwEnv) -> HwReport:
    """Every selected trial UNAVAILABLE with the reason no GPU could be used."""
    reason = "no GPU found: " + "; ".join(r for r in (env.nvml_reason, env.cuda_reason) if r)
    rows = [unavailable(n, reason) for t in trials for n in HW_TRIALS[t].sheet_names(t)]
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


def run_trials(ctx: HwContext, trials: list[str]) -> list[TrialResult]:
    """Each trial in registry order (one that needs torch with CUDA is UNAVAILABLE without it), then what
    judges at the end of the run; the rows in sheet order."""
    results: list[TrialResult] = []
    for name in trials:
        trial = HW_TRIALS[name]
        if trial.gpu and ctx.env.cuda_reason is not None:
            results.extend(unavailable(n, ctx.env.cuda_reason) for n in trial.sheet_names(name))
        else:
            t0 = time.perf_counter()
            rows = trial.run(ctx, name)
            wall_s = round(time.perf_counter() - t0, 2)
            for row in rows:
                row.evidence.setdefault("trial_wall_s", wall_s)
            results.extend(rows)
    for judge in ctx.at_end:
        results.extend(judge())
    order = {name: n for n, name in enumerate(HW_TRIALS)}
    return sorted(results, key=lambda r: order.get(r.name, order.get(r.name.split(".")[0], len(order))))


def run_hw(cfg: HwConfig, host_fleet: bool = True) -> HwRun:
    """Run ``cfg.trials`` on ``cfg.gpus``; see the module doc for the order. ``host_fleet``: judge the GPUs
    against the host's like GPUs (``hw --ray`` leaves it to the fleet view, which takes every node's)."""
    try:
        trials = expand_trials(cfg.trials)
    except ValueError as exc:
        raise ConfigError(f"--trials: {exc}") from None
    env = probe()
    if env.device_count == 0:
        return HwRun(no_gpu_report(trials, env))
    gpus = _gpu_infos(env, select_gpus(cfg.gpus, env.device_count))
    versions = read_versions(env.nvml) if env.nvml is not None else {}
    ctx = HwContext(cfg, env, gpus, versions)
    results = run_trials(ctx, trials)
    if host_fleet:
        results += host_verdicts(gpus, results, cfg.fleet_margin)
    report = HwReport(gpus=gpus, trials=results, environment={**env.versions, **versions})
    return HwRun(report, ctx.artifacts)
