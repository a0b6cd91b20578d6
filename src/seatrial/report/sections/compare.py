"""Compare section: every metric per workload and level in verdict words, a plot of the ratios per
level, and for two deployments the per-phase table and the prefill gap split (an estimate)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from seatrial.report.plots import line_svg
from seatrial.report.tables import html_table
from seatrial.runs.comparisons import capacity_table, comparison_table, deployment_table, split_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.compare import CompareSummary


def _plot(summary: CompareSummary) -> str | None:
    series: dict[str, dict[str, float | None]] = {}
    levels: list[str] = []
    for c in summary.comparisons:
        if c.level not in levels:
            levels.append(c.level)
        for m in c.metrics:
            series.setdefault(f"{c.workload} {c.candidate} {m.metric}", {})[c.level] = m.ratio
    if not levels or not series:
        return None
    x = list(range(len(levels)))
    chosen: dict[str, Sequence[float | None]] = {
        k: [v.get(lv) for lv in levels] for k, v in series.items() if "p99" not in k
    }
    svg = line_svg(x, chosen, title="Candidate / baseline per level", xlabel="level index", ylabel="ratio")
    return svg + f"<p class='meta'>levels: {', '.join(f'{i}={lv}' for i, lv in enumerate(levels))}</p>"


def section(summary: SummaryModel) -> str | None:
    if not isinstance(summary, CompareSummary):
        return None
    parts = ["<h2>Comparison</h2>"] + ([html_table(comparison_table(summary))] if summary.comparisons else [])
    for table in (deployment_table(summary), split_table(summary), capacity_table(summary)):
        if table is not None:
            parts.append(html_table(table))
    dep = summary.deployment
    notes = [dep.confounded, dep.capacity.note if dep.capacity.rows else None] if dep else []
    for note in notes:
        if note:
            parts.append(f"<p class='meta'>{html.escape(note)}</p>")
    if (plot := _plot(summary)) is not None:
        parts.append(f"<div class='plots'>{plot}</div>")
    return "".join(parts)
