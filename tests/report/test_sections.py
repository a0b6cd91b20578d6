"""The shared report picks each capability's section from the summary it is given."""

from __future__ import annotations

import json
from pathlib import Path

from seatrial.report.html import render_html

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence" / "h200x2" / "hw_h200x2.json"


def test_hw_sheet_renders_from_a_hw_run_and_from_a_combined_summary() -> None:
    sheet = json.loads(EVIDENCE.read_text())
    for summary in (sheet, {"hw": sheet, "steps": []}):
        page = render_html(summary, "t")
        assert "collectives" in page and "REVIEW_REQUIRED" in page and "NVIDIA H200" in page
        assert "Load levels" not in page


def test_unknown_summary_says_so() -> None:
    page = render_html({"something": 1}, "t")
    assert "Nothing to report" in page and "something" in page
