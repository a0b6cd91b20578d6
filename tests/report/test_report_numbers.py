"""The numbers a report shows are the summary's: the levels table's cells in their columns and the
TTFT plot's points, read back from report.html rendered from a known summary (issue 42 item 17)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import BenchSummary

from .svgpoints import series, svgs

LEVELS = (1, 2, 4)


def dist(c: int, base: float) -> dict[str, float]:
    """Every statistic distinct per level and per percentile: a swap of any two shows."""
    return {"mean": base + 5 * c, "p50": base + c, "p90": base + 20 + 3 * c, "p95": base + 30 + 4 * c,
            "p99": base + 40 + 7 * c, "max": base + 60 + 9 * c}  # fmt: skip


def level(c: int) -> dict[str, Any]:
    return {
        "concurrency": c, "rate": None, "requests_ok": 10 * c, "requests_failed": c - 1,
        "output_tok_s": 111.0 * c, "per_user_output_tok_s": 55.5, "ttft_ms": dist(c, 100.0),
        "tpot_ms": dist(c, 10.0), "itl_ms": dist(c, 20.0), "e2e_ms": dist(c, 500.0),
        "server": {"running_max": c, "waiting_max": 0, "kv_cache_usage_max": 0.25}, "valid": True,
        "invalid_reasons": [],
    }  # fmt: skip


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("report") / "run"
    with RunFolder(folder, "bench", {}) as run:
        run.write_summary(
            BenchSummary.model_validate({"levels": [level(c) for c in LEVELS], "workload": "random"})
        )
    return write_report(folder).read_text()


def table(page: str, title: str) -> list[dict[str, str]]:
    """The rows of the table under ``<h3>title</h3>``, each as column -> cell text."""
    body = re.search(rf"<h3>{re.escape(title)}</h3><table>(.*?)</table>", page, flags=re.S)
    assert body, f"no table {title!r}"
    rows = [
        re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, flags=re.S)
        for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body[1], flags=re.S)
    ]
    head, *cells = [[html.unescape(c) for c in r] for r in rows]
    return [dict(zip(head, r, strict=True)) for r in cells]


def test_the_levels_table_shows_each_levels_percentiles_in_their_columns(page: str) -> None:
    """Catches TTFT p50 and p99 swapped (or one level's figures under another's label)."""
    rows = table(page, "Load levels")
    assert [r["level"] for r in rows] == ["C=1", "C=2", "C=4"]
    for c, row in zip(LEVELS, rows, strict=True):
        assert row["TTFT p50"] == f"{100 + c:.1f}" and row["TTFT p99"] == f"{140 + 7 * c:.1f}", row
        assert row["TPOT p50"] == f"{10 + c:.1f}" and row["ITL p99"] == f"{60 + 7 * c:.1f}", row
        assert row["E2E p50"] == f"{500 + c:.1f}" and row["out tok/s"] == f"{111 * c:.1f}", row
        assert row["ok"] == str(10 * c) and row["failed"] == str(c - 1)


def test_the_ttft_plot_draws_each_percentile_at_its_values(page: str) -> None:
    """Catches a plot that draws p99 as p50 (or p90), drops a level, or plots another metric."""
    plot = next(s for s in svgs(page) if "<!-- TTFT percentiles -->" in s)
    drawn = series(plot)
    assert list(drawn) == ["TTFT p50", "TTFT p90", "TTFT p99"]
    want = {"TTFT p50": [100 + c for c in LEVELS], "TTFT p90": [120 + 3 * c for c in LEVELS],
            "TTFT p99": [140 + 7 * c for c in LEVELS]}  # fmt: skip
    for name, ys in want.items():
        assert drawn[name] == pytest.approx(ys, abs=0.05), (name, drawn[name])


def test_the_svg_reader_reads_what_matplotlib_drew() -> None:
    """The reader itself can fail: a plot of known points comes back as those points, named."""
    from seatrial.report.plots import line_svg

    svg = line_svg([1, 2], {"a": [3.0, 7.5], "b": [-2.0, 0.25]}, title="t", xlabel="x", ylabel="y")
    assert series(svg) == {
        "a": pytest.approx([3.0, 7.5], abs=0.01),
        "b": pytest.approx([-2.0, 0.25], abs=0.01),
    }
