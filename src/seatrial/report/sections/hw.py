"""Hardware section: the ``seatrial hw`` verdict sheet, rendered by seatrial.hw.report."""

from __future__ import annotations

from typing import Any


def _sheet(summary: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(summary.get("hw"), dict):  # a demo or combined summary
        return summary["hw"]
    if "gpus" in summary and "trials" in summary:  # a `seatrial hw` run folder
        return summary
    return None


def section(summary: dict[str, Any]) -> str | None:
    sheet = _sheet(summary)
    if sheet is None:
        return None
    from seatrial.hw.models import HwReport
    from seatrial.hw.report import render_hw_section

    return render_hw_section(HwReport.from_json(sheet))
