"""Capacity section: the production profile, the capacity and its cost line, attainment against load with
each probe's interval (the target line, the capacity marked), TTFT and TPOT per probe, every probe."""

from __future__ import annotations

from seatrial.report.plots import intervals_svg, line_svg
from seatrial.report.tables import html_table
from seatrial.runs.capacity import capacity_tables
from seatrial.runs.levels import level_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.capacity import CapacitySummary


def _plots(s: CapacitySummary) -> str:
    probes = sorted(s.probes, key=lambda p: p.load)
    if not probes:
        return ""
    unit = "req/s" if s.capacity.mode == "rate" else "users"
    x = [p.load for p in probes]
    marked = s.capacity.rate_req_s if s.capacity.mode == "rate" else s.capacity.concurrency
    plots = [
        intervals_svg(
            x, [p.attainment for p in probes], [p.attainment_ci[0] for p in probes],
            [p.attainment_ci[1] for p in probes], title="SLO attainment against load", xlabel=unit,
            ylabel="share of good requests", target=s.capacity.attainment_target, marked=marked,
            labels=[p.verdict for p in probes],
        ),
        line_svg(x, {f"TTFT {q}": [getattr(p.ttft_ms, q) for p in probes] for q in ("p50", "p99")},
                 title="TTFT per probe", xlabel=unit, ylabel="ms"),
        line_svg(x, {f"TPOT {q}": [getattr(p.tpot_ms, q) for p in probes] for q in ("p50", "p99")},
                 title="TPOT per probe", xlabel=unit, ylabel="ms"),
    ]  # fmt: skip
    return f"<div class='plots'>{''.join(plots)}</div>"


def section(s: SummaryModel) -> str | None:
    if not isinstance(s, CapacitySummary):  # a capacity run over several starts: its starts' folders have the probes
        return None
    tables = "".join(html_table(t) for t in capacity_tables(s))
    levels = html_table(level_table(s.levels)) if s.levels else ""
    return f"<h2>Capacity</h2>{tables}{_plots(s)}<h3>Every run of every probe</h3>{levels}"
