"""Experiment section: first what voids or caps decisions (INVALID profiles, failed starts, order
warnings), then the decisions with the correction used, the A/A checks, the drift over the run, every
start's value per setting and level (dots), the per-level statistics and the starts."""

from __future__ import annotations

import html
import math

from seatrial.report.plots import dots_svg
from seatrial.report.tables import html_table
from seatrial.runs.decisions import aa_table, decision_table, drift_table, level_table, starts_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.experiment import ExperimentSummary


def _plot(summary: ExperimentSummary, concurrency: int, metric: str) -> str | None:
    names, values = [], []
    for s in summary.settings:
        level = next((lv for lv in s.levels if lv.concurrency == concurrency), None)
        st = (level.stats if level else {}).get(metric) or {}
        names.append(s.name)
        values.append([v for v in st.get("per_start", []) if v is not None and math.isfinite(v)])
    if not any(values):
        return None
    return dots_svg(names, values, title=f"{metric} at C={concurrency}: every start", ylabel=metric)


def _items(rows: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in rows) + "</ul>"


def _first(summary: ExperimentSummary) -> list[str]:
    """What must be read before the decisions: INVALID profiles, failed starts, order warnings."""
    parts = []
    invalid = sorted({f"{d.profile}: {'; '.join(d.invalid)}" for d in summary.decisions if d.invalid})
    if invalid:
        parts.append(f"<p class='bad'>INVALID: an A/A check failed, no decision of these profiles holds</p>{_items(invalid)}")
    if summary.failed_starts:
        rows = [f"{f['setting']} start {f['start'] + 1}: {f['reason']}" for f in summary.failed_starts]
        parts.append(f"<h3 class='bad'>Failed starts</h3>{_items(rows)}")
    if summary.failed_settings:
        parts.append(f"<p class='bad'>no start came up for: {html.escape(', '.join(summary.failed_settings))}</p>")
    for w in summary.warnings:
        parts.append(f"<p class='bad'>warning: {html.escape(w)}</p>")
    return parts


def section(summary: SummaryModel) -> str | None:
    if not isinstance(summary, ExperimentSummary):
        return None
    parts = ["<h2>Experiment</h2>", *_first(summary), html_table(decision_table(summary.decisions))]
    if summary.multiplicity:
        parts.append(f"<p class='meta'>{html.escape(summary.multiplicity)}</p>")
    if summary.aa_checks:
        parts.append(html_table(aa_table(summary.aa_checks)))
    if summary.drift:
        parts.append(html_table(drift_table(summary.drift)))
    shown = {(d.concurrency, d.key or d.metric) for d in summary.decisions}
    plots = [svg for c, m in sorted(shown) if (svg := _plot(summary, c, m))]
    if plots:
        parts.append(f"<div class='plots'>{''.join(plots)}</div>")
    for metric in sorted({m for _, m in shown} | {"output_tok_s", "ttft_ms.p99"}):
        parts.append(html_table(level_table(summary.settings, metric)))
    if summary.invalid_levels:
        rows = [f"{r['setting']} start {r['start'] + 1} C={r['concurrency']}: {'; '.join(r['reasons'])}"
                for r in summary.invalid_levels]  # fmt: skip
        parts.append(f"<h3>Levels left out (invalid)</h3>{_items(rows)}")
    parts.append(html_table(starts_table(summary.settings)))
    return "".join(parts)
