"""Report sections, in page order. Add a module and list it here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def all_sections() -> list[Callable[[dict[str, Any]], str | None]]:
    from seatrial.report.sections import bench, compare, demo, experiment, fleet, hw, trials

    return [demo.section, fleet.section, compare.section, experiment.section, hw.section, trials.section,
            bench.section]  # fmt: skip
