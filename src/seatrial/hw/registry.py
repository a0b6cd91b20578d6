"""The ``seatrial hw`` trials: one entry per trial, in the order a run executes them. A new trial is a
runner ``(ctx, name) -> list[TrialResult]`` (seatrial.hw.host_trials without torch, seatrial.hw.gpu_trials
with it) and one entry here naming its module and function (imported when it runs); ``TRIAL_NAMES``,
``--trials`` and the sheet's order derive from it. The sheet's one line of key figures per trial is
seatrial.runs.hwsheet.SUMMARIES (below this layer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seatrial.hw.context import HwContext
    from seatrial.runs.result import TrialResult

HwTrialFn = Callable[["HwContext", str], "list[TrialResult]"]

#: The sub-trials ``health`` expands to, one verdict each per GPU.
HEALTH_PARTS: tuple[str, ...] = ("ecc", "retired_pages", "row_remap", "xid", "nvlink", "pcie")


@dataclass(frozen=True)
class Runner:
    """``seatrial.hw.<module>.<function>``, imported when the trial runs: the names (``--trials``, its
    help) are known without importing what measures them."""

    module: str
    function: str

    def resolve(self) -> HwTrialFn:
        fn: HwTrialFn = getattr(import_module(f"seatrial.hw.{self.module}"), self.function)
        return fn

    def __call__(self, ctx: HwContext, name: str) -> list[TrialResult]:
        return self.resolve()(ctx, name)


@dataclass(frozen=True)
class HwTrial:
    """``run``: measures and judges the trial on ``ctx``'s GPUs (its rows: one per GPU, or one with ``gpu``
    null); ``gpu``: it needs torch with CUDA (without it every row is UNAVAILABLE with torch's reason);
    ``parts``: the names its rows carry when not its own (``health`` -> ``health.ecc``, ...)."""

    run: HwTrialFn
    gpu: bool = False
    parts: tuple[str, ...] = ()

    def sheet_names(self, name: str) -> list[str]:
        return list(self.parts) or [name]


HW_TRIALS: dict[str, HwTrial] = {
    "inventory": HwTrial(Runner("host_trials", "inventory")),
    "health": HwTrial(Runner("host_trials", "health"), parts=tuple(f"health.{p}" for p in HEALTH_PARTS)),
    "dcgm": HwTrial(Runner("host_trials", "dcgm")),
    "precision.bf16": HwTrial(Runner("gpu_trials", "precision"), gpu=True),
    "precision.fp8": HwTrial(Runner("gpu_trials", "precision"), gpu=True),
    "precision.fp4": HwTrial(Runner("gpu_trials", "precision"), gpu=True),
    "burn": HwTrial(Runner("gpu_trials", "burn"), gpu=True),
    "collectives": HwTrial(Runner("gpu_trials", "collectives"), gpu=True),
}
#: Every trial name, in the order a run executes them (health is judged at the end of the run).
TRIAL_NAMES: tuple[str, ...] = tuple(HW_TRIALS)
