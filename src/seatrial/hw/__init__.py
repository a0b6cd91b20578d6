"""``seatrial hw``: Stage 1 hardware trials (inventory, health, precision paths, burn, collectives, DCGM)
that end in verdicts and never report PASS for a path that did not run.

Public API: :func:`run_hw` (config -> verdict sheet and artifacts) and the models (the sheet's rows are
``seatrial.runs.hwsheet.sheet_table``, shown by the console and ``seatrial.report.sections.hw``; trial rows
are ``seatrial.runs.TrialResult``). Torch is imported only by the trials that need it.
"""

from seatrial.hw.models import TRIAL_NAMES, GpuInfo, HwConfig, HwReport
from seatrial.hw.runner import HwRun, run_hw

__all__ = [
    "TRIAL_NAMES",
    "GpuInfo",
    "HwConfig",
    "HwReport",
    "HwRun",
    "run_hw",
]
