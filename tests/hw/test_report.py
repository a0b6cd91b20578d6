"""The console table and the HTML section, rendered from the committed H200 evidence."""

from __future__ import annotations

import json
from pathlib import Path

from seatrial.cli.hw import hw_sheet
from seatrial.cli.progress import table_text
from seatrial.hw import HwReport
from seatrial.report.sections.hw import render_sheet
from seatrial.runs import TrialResult
from seatrial.runs.verdicts import Verdict

EVIDENCE = Path(__file__).parents[2] / "evidence" / "h200" / "hw_h200.json"


def h200_report() -> HwReport:
    doc = json.loads(EVIDENCE.read_text())
    assert set(doc) == {"gpus", "trials"}
    return HwReport.from_json(doc)


def test_round_trip_of_the_evidence_json_is_exact() -> None:
    doc = json.loads(EVIDENCE.read_text())
    again = h200_report().to_json()
    # the recorded sheet predates power_limit_w (issue 21: the fleet rule's kinds); it was not read then
    assert [{k: v for k, v in g.items() if k != "power_limit_w"} for g in again["gpus"]] == doc["gpus"]
    assert [
        {k: v for k, v in t.items() if k in ("name", "gpu", "verdict", "reason", "evidence")}
        for t in again["trials"]
    ] == doc["trials"]
    # what the verdicts add up to: PASSes, fp4 UNSUPPORTED and four readings NVML could not give
    assert again["passed"] is True and again["counts"] == {"PASS": 8, "UNAVAILABLE": 4, "UNSUPPORTED": 1}
    assert {t["name"] for t in again["not_measured"]} == {
        "health.retired_pages", "health.nvlink", "dcgm", "collectives", "precision.fp4"
    }  # fmt: skip


def test_table_shows_each_trial_with_its_figures() -> None:
    text = table_text(hw_sheet(h200_report()), width=220)
    assert "precision.fp8" in text and "nvjet_sm90_qqtst_144x128_128x6_1x2_h_bz_coopA_algo2_TNN" in text
    assert "UNSUPPORTED" in text and "CUBLAS_STATUS_NOT_SUPPORTED" in text
    burn = next(line for line in text.splitlines() if line.startswith("│ burn"))
    assert "PASS" in burn and "share 100%" in burn and "events sw_power_cap" in burn


def test_table_matches_the_printed_evidence_rows() -> None:
    printed = (EVIDENCE.parent / "run" / "table.txt").read_text()
    assert table_text(hw_sheet(h200_report())) == printed


def test_html_section_is_an_escaped_fragment_with_telemetry() -> None:
    report = h200_report()
    report.trials.append(
        TrialResult(name="dcgm", gpu=None, verdict=Verdict.UNAVAILABLE, reason="<script>x</script>")
    )
    html = render_sheet(report)
    assert html.startswith('<section class="seatrial-hw">') and html.rstrip().endswith("</section>")
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html
    assert "burn telemetry, GPU 0 (61 samples)" in html
    assert html.count('<tr class="verdict-pass">') == sum(t.verdict is Verdict.PASS for t in report.trials)
