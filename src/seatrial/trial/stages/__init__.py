"""The trial's stages, in seed 004's order: each a function from the trial's context to its :class:`Outcome`,
writing its run folder under the trial's (``N-name/``)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from seatrial.trial.context import Outcome, TrialContext

Stage = Callable[[TrialContext], Outcome]

#: the stages a stage reads the outcome of: when one of them runs again, so does it
READS: dict[str, tuple[str, ...]] = {
    "checkpoint": (),
    "hardware": (),
    "io": (),
    "fleet": (),
    "serving": ("checkpoint", "hardware"),
    "capacity": ("checkpoint", "hardware", "serving"),
    "decision": ("checkpoint", "serving", "capacity"),
}


def stage(name: str) -> Stage:
    fn: Stage = import_module(f"seatrial.trial.stages.{name}").run
    return fn
