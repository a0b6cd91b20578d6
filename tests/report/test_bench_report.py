"""report.html of a bench run: self-contained, plots drawn (checked in headless Chromium)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder
from seatrial.testing.server import SyntheticConfig, ThreadedServer

from .chromium import drawn_pixels, screenshot


def make_run(tmp: Path) -> Path:
    cfg = BenchConfig.model_validate(
        {
            "target": {"url": "http://127.0.0.1:1"},
            "workload": {"name": "random", "input_len": 8, "output_len": 8},
            "load": {"concurrency": [1, 2, 4], "requests": 8, "warmup": 1},
        }
    )
    with ThreadedServer(SyntheticConfig(itl_s=0.001)) as srv:
        cfg.target.url = srv.url
        with RunFolder(tmp / "run", "bench", cfg.model_dump(mode="json")) as folder:
            asyncio.run(run_bench(cfg, folder))
    return tmp / "run"


def test_report_is_self_contained_with_plots(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    page = write_report(run)
    text = page.read_text()
    assert text.count("<svg") == 3 and "C=4" in text
    assert not re.search(r"(src|href)=\"https?://", text)  # nothing fetched from the network
    png = screenshot(page, tmp_path / "report.png", tmp_path)
    assert drawn_pixels(png) > 20_000


def test_blank_page_has_few_drawn_pixels(tmp_path: Path) -> None:
    """The pixel check can fail: an empty page stays under its threshold."""
    page = tmp_path / "blank.html"
    page.write_text("<html><body><p>x</p></body></html>")
    png = screenshot(page, tmp_path / "blank.png", tmp_path)
    assert drawn_pixels(png) < 2_000


def test_report_plots_gpu_power_over_the_run_with_the_levels_marked(tmp_path: Path) -> None:
    from seatrial.hw.energy import summarize
    from seatrial.runs.summaries.bench import BenchSummary, LevelSummary

    def level(c: int, start_s: float, watts: float) -> LevelSummary:
        samples = [{"t_s": k / 10, "power_w": watts + 20 * (k % 3), "energy_mj": 1e6 + k * watts * 100}
                   for k in range(40)]  # fmt: skip
        gpus = [{"node": "h200", "index": 0, "samples": samples}]
        telemetry = summarize(gpus, output_tokens=400, hz=10, source="nvml", start_s=start_s, window_s=4.0)
        return LevelSummary(concurrency=c, output_tokens=400, gpu_telemetry=telemetry)

    summary = BenchSummary(levels=[level(1, 0.5, 300.0), level(8, 6.0, 650.0)], workload="random")
    with RunFolder(tmp_path / "run", "bench", {}) as folder:
        folder.write_summary(summary)
    page = write_report(tmp_path / "run")
    text = page.read_text()
    assert "GPU power over the run" in text and "GPU telemetry per level" in text
    assert text.count("<svg") == 4 and "h200 GPU 0" in text
    png = screenshot(page, tmp_path / "report.png", tmp_path)
    assert drawn_pixels(png) > 20_000
