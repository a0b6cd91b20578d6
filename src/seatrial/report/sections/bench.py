"""Bench section: per-level table, throughput against concurrency, latency percentiles."""

from __future__ import annotations

import html

from seatrial.report.plots import line_svg, timeline_svg
from seatrial.report.tables import html_table
from seatrial.runs.levels import (
    engine_table,
    gpu_table,
    level_notes,
    level_table,
    plan_check_line,
    schedule_table,
    server_timing_table,
    span_lines,
    turns_table,
)
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.bench import BenchSummary, LevelSummary


def _notes(levels: list[LevelSummary]) -> str:
    """The client's self-check notes (a stalled client, merged events, ITL per chunk), per level."""
    items = [f"<li>{html.escape(line)}</li>" for line in level_notes(levels)]
    return f"<h3>Client self-checks</h3><ul>{''.join(items)}</ul>" if items else ""


def _plan(summary: BenchSummary) -> str:
    check = summary.plan_check
    return f"<p class='meta'>{html.escape(plan_check_line(check))}</p>" if check is not None else ""


def _spans(summary: BenchSummary) -> str:
    """The engine's spans per level, and where every span of the run went."""
    table = server_timing_table(summary.levels)
    items = "".join(f"<li>{html.escape(line)}</li>" for line in span_lines(summary.spans))
    return (html_table(table) if table else "") + (f"<ul>{items}</ul>" if items else "")


def _gpus(levels: list[LevelSummary]) -> str:
    """The GPUs per level, and their power over the run with the levels marked."""
    table = gpu_table(levels)
    if table is None:
        return ""
    lines: dict[str, tuple[list[float], list[float | None]]] = {}
    windows = []
    for lv in levels:
        g = lv.gpu_telemetry
        if g is None or g.status != "MEASURED" or g.start_s is None:
            continue
        windows.append((g.start_s, g.start_s + (g.window_s or 0.0), lv.label))
        for gpu in g.gpus:
            t, w = lines.setdefault(f"{gpu.node} GPU {gpu.index}", ([], []))
            t += [*gpu.series.t_s, g.start_s + (g.window_s or 0.0)]  # a gap between levels breaks the line
            w += [*gpu.series.power_w, None]
    plot = timeline_svg(lines, windows, title="GPU power over the run", xlabel="s since the run began",
                        ylabel="W") if lines else ""  # fmt: skip
    return html_table(table) + (f"<div class='plots'>{plot}</div>" if plot else "")


def section(summary: SummaryModel) -> str | None:
    if not isinstance(summary, BenchSummary) or not summary.levels:
        return None
    levels = summary.levels
    x = [lv.concurrency for lv in levels]
    plots = [
        line_svg(
            x,
            {"output tok/s": [lv.output_tok_s for lv in levels]},
            title="Throughput vs concurrency",
            xlabel="concurrency",
            ylabel="output tok/s",
            logx=len(x) > 2,
            right={"per-user tok/s": [lv.per_user_output_tok_s for lv in levels]},
            right_label="per-user tok/s",
        ),
        line_svg(
            x,
            {f"TTFT {p}": [lv.figure(f"ttft_ms.{p}") for lv in levels] for p in ("p50", "p90", "p99")},
            title="TTFT percentiles",
            xlabel="concurrency",
            ylabel="ms",
            logx=len(x) > 2,
        ),
        line_svg(
            x,
            {f"ITL {p}": [lv.figure(f"itl_ms.{p}") for lv in levels] for p in ("p50", "p90", "p99")},
            title="ITL percentiles",
            xlabel="concurrency",
            ylabel="ms",
            logx=len(x) > 2,
        ),
    ]
    wl, model = html.escape(str(summary.workload or "")), html.escape(str(summary.model or ""))
    return (
        f"<h2>Load levels</h2><p class='meta'>model {model} · workload {wl} · endpoint "
        f"{html.escape(str(summary.endpoint or ''))}</p>{html_table(level_table(levels))}"
        f"{html_table(engine) if (engine := engine_table(levels)) else ''}{_plan(summary)}{_spans(summary)}"
        f"{''.join(html_table(t) for t in (schedule_table(levels), turns_table(levels)) if t)}{_gpus(levels)}"
        f"{_notes(levels)}"
        f"<div class='plots'>{''.join(plots)}</div>"
    )
