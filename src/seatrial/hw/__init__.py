"""``seatrial hw``: Stage 1 hardware trials (inventory, health, precision paths, burn, collectives, DCGM)
that end in verdicts and never report PASS for a path that did not run.

Public API: :func:`run_hw` (config -> verdict sheet and artifacts) and the models (the sheet's rows are
``seatrial.runs.hwsheet.sheet_table``, shown by the console and ``seatrial.report.sections.hw``; trial rows
are ``seatrial.runs.TrialResult``). Torch is imported only by the trials that need it, and the names below
only when first used (``seatrial hw --help`` reads the registry alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seatrial.lazy import lazy_names

if TYPE_CHECKING:
    from seatrial.hw.models import TRIAL_NAMES, GpuInfo, HwConfig, HwReport
    from seatrial.hw.runner import HwRun, run_hw

_WHERE = {"TRIAL_NAMES": "models", "GpuInfo": "models", "HwConfig": "models", "HwReport": "models",
          "HwRun": "runner", "run_hw": "runner"}  # fmt: skip

__all__ = [
    "TRIAL_NAMES",
    "GpuInfo",
    "HwConfig",
    "HwReport",
    "HwRun",
    "run_hw",
]


__getattr__ = lazy_names(__name__, _WHERE)
