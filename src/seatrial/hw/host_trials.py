"""The trials that need no torch: inventory (NVML), health (NVML counters read before the first trial and
after the last, XID events watched in between) and DCGM's own diagnostic."""

from __future__ import annotations

from typing import Any

from seatrial.hw.context import HwContext
from seatrial.hw.dcgm import run_dcgm
from seatrial.hw.health import read_health
from seatrial.hw.health_judge import judge_health
from seatrial.hw.inventory import judge_inventory
from seatrial.hw.nvml import Nvml
from seatrial.hw.registry import HEALTH_PARTS
from seatrial.hw.topology import read_topology
from seatrial.hw.xid import XidWatcher
from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict


def unavailable(name: str, reason: str) -> TrialResult:
    return TrialResult(name=name, gpu=None, verdict=Verdict.UNAVAILABLE, reasons=because(reason))


def inventory(ctx: HwContext, name: str) -> list[TrialResult]:
    env = ctx.env
    if env.nvml is None:
        return [unavailable(name, env.nvml_reason or "NVML unavailable")]
    topology = read_topology(ctx.selected)
    return [judge_inventory(env.device_count, ctx.gpus, ctx.versions, ctx.cfg.expect_gpus, topology)]


def dcgm(ctx: HwContext, name: str) -> list[TrialResult]:
    return run_dcgm(ctx.cfg.dcgm_level)


def health(ctx: HwContext, name: str) -> list[TrialResult]:
    """Read the counters now and watch XID events; the verdicts come at the end of the run."""
    env = ctx.env
    if env.nvml is None:
        reason = env.nvml_reason or "NVML unavailable"
        return [unavailable(f"health.{p}", reason) for p in HEALTH_PARTS]
    start = {i: read_health(env.nvml, i) for i in ctx.selected}
    watcher = XidWatcher(env.nvml, ctx.selected)
    nvml = env.nvml
    ctx.at_end.append(lambda: _judge_health(ctx, nvml, start, watcher))
    return []


def _judge_health(ctx: HwContext, nvml: Nvml, start: dict[int, Any], watcher: XidWatcher) -> list[TrialResult]:
    xids = watcher.stop()
    end = {i: read_health(nvml, i) for i in ctx.selected}
    ctx.artifacts["health_readings"] = {
        str(i): {"start": start[i], "end": end[i], "xid": xids[i]} for i in ctx.selected
    }
    return [r for i in ctx.selected for r in judge_health(i, start[i], end[i], xids[i])]
