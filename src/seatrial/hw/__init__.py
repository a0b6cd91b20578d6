"""``seatrial hw``: Stage 1 hardware trials (inventory, health, precision paths, burn, collectives, DCGM)
that end in verdicts and never report PASS for a path that did not run.

Public API: :func:`run_hw` (config -> verdict sheet and artifacts), the models, the console table
and the HTML section. Torch is imported only by the trials that need it.
"""

from seatrial.hw.models import TRIAL_NAMES, GpuInfo, HwConfig, HwReport, TrialResult
from seatrial.hw.report import render_hw_section
from seatrial.hw.runner import HwRun, run_hw
from seatrial.hw.table import build_table, render_text

__all__ = [
    "TRIAL_NAMES",
    "GpuInfo",
    "HwConfig",
    "HwReport",
    "HwRun",
    "TrialResult",
    "build_table",
    "render_hw_section",
    "render_text",
    "run_hw",
]
