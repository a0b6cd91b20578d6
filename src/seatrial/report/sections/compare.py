"""Compare section: every metric per workload and level in verdict words, a plot of the ratios per
level, and for two deployments the per-phase table and the prefill gap split (an estimate)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seatrial.report.plots import line_svg
from seatrial.report.sections.bench import html_table
from seatrial.runs.comparisons import comparison_table, deployment_table, split_table


def _plot(summary: dict[str, Any]) -> str | None:
    series: dict[str, dict[str, float | None]] = {}
    levels: list[str] = []
    for c in summary["comparisons"]:
        if c["level"] not in levels:
            levels.append(c["level"])
        for m in c["metrics"]:
            series.setdefault(f"{c['workload']} {c['candidate']} {m['metric']}", {})[c["level"]] = m["ratio"]
    if not levels or not series:
        return None
    x = list(range(len(levels)))
    chosen: dict[str, Sequence[float | None]] = {
        k: [v.get(lv) for lv in levels] for k, v in series.items() if "p99" not in k
    }
    svg = line_svg(x, chosen, title="Candidate / baseline per level", xlabel="level index", ylabel="ratio")
    return svg + f"<p class='meta'>levels: {', '.join(f'{i}={lv}' for i, lv in enumerate(levels))}</p>"


def section(summary: dict[str, Any]) -> str | None:
    if summary.get("mode") not in ("runs", "deployments") or "comparisons" not in summary:
        return None
    parts = ["<h2>Comparison</h2>", html_table(comparison_table(summary))]
    for table in (deployment_table(summary), split_table(summary)):
        if table is not None:
            parts.append(html_table(table))
    if summary.get("deployment"):
        parts.append("<p class='meta'>The split is an estimate: the decode TPOT ratio stands for the precision "
                     "share, and what is left of the prefill ratio for the topology (seed 001).</p>")  # fmt: skip
    if (plot := _plot(summary)) is not None:
        parts.append(f"<div class='plots'>{plot}</div>")
    return "".join(parts)
