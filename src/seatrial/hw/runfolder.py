"""The run folder of ``seatrial hw --out DIR``.

run.json          config and versions (no secrets)
summary.json      the verdict sheet, exactly what --json writes
table.txt         the printed table
hw_section.html   the HTML fragment for the shared report
artifacts.json    raw material: profiler traces, health readings (start, end, XID)
"""

from __future__ import annotations

from pathlib import Path

from seatrial.hw.models import HwConfig
from seatrial.hw.report import render_hw_section
from seatrial.hw.runner import HwRun
from seatrial.hw.table import render_text
from seatrial.jsonio import write_json


def write_run_folder(out: Path, run: HwRun, cfg: HwConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_json(
        out / "run.json", {"command": "hw", "config": cfg.model_dump(), "environment": run.report.environment}
    )
    write_json(out / "summary.json", run.report.to_json())
    (out / "table.txt").write_text(render_text(run.report), encoding="utf-8")
    (out / "hw_section.html").write_text(render_hw_section(run.report), encoding="utf-8")
    write_json(out / "artifacts.json", run.artifacts)
