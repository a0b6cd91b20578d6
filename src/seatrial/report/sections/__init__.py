"""Report sections, and which a command's page shows, in page order: one place to add a section."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seatrial.runs.summaries.base import SummaryModel

#: a section: the command's typed summary -> its HTML fragment, or None where it has nothing to show
Section = Callable[["SummaryModel"], str | None]

#: command (run.json's) -> the sections its page shows, in order: a module's ``section``, or ``module:function``
BY_COMMAND: dict[str, tuple[str, ...]] = {
    "bench": ("bench",),
    "accept": ("trials",),
    "capacity": ("capacity", "capacity:replica_section"),
    "experiment": ("experiment",),
    "compare": ("compare",),
    "hw": ("hw",),
    "io": ("io",),
    "sync": ("fleet:sync_section",),
    "doctor": ("fleet:doctor_section",),
    "trial": ("trial",),
    "trial-checkpoint": ("trial:checkpoint_section",),
}


#: command -> ``module:function`` giving the fragments of the run folders inside its own (a trial's stages, a
#: capacity search's fresh starts)
NESTED: dict[str, str] = {"trial": "trial:stage_pages", "capacity": "capacity:start_pages"}


def nested_for(command: str | None) -> Callable[[Path, SummaryModel], list[str]] | None:
    spec = NESTED.get(command or "")
    if spec is None:
        return None
    module, _, function = spec.partition(":")
    fn: Callable[[Path, SummaryModel], list[str]] = getattr(import_module(f"seatrial.report.sections.{module}"), function)
    return fn


def sections_for(command: str | None) -> list[Section]:
    """The sections of ``command``'s page; none for a command without a page."""
    out = []
    for spec in BY_COMMAND.get(command or "", ()):
        module, _, function = spec.partition(":")
        out.append(getattr(import_module(f"seatrial.report.sections.{module}"), function or "section"))
    return out
