"""Experiment section: the decisions, every start's value per setting and level (dots, mean and the
treatment's interval), the per-level statistics and the starts (start-up time, how each stopped)."""

from __future__ import annotations

import html
import math
from typing import Any

from seatrial.report.plots import dots_svg
from seatrial.report.sections.bench import html_table
from seatrial.runs.decisions import decision_table, level_table, starts_table


def _plot(summary: dict[str, Any], concurrency: int, metric: str) -> str | None:
    names, values = [], []
    for s in summary["settings"]:
        level = next((lv for lv in s.get("levels", []) if lv["concurrency"] == concurrency), None)
        st = (level or {}).get("stats", {}).get(metric) or {}
        names.append(s["name"])
        values.append([v for v in st.get("per_start", []) if v is not None and math.isfinite(v)])
    if not any(values):
        return None
    return dots_svg(names, values, title=f"{metric} at C={concurrency}: every start", ylabel=metric)


def section(whole: dict[str, Any]) -> str | None:
    summary = whole if "decisions" in whole else whole.get("experiment")  # an experiment's, or the demo's
    if not isinstance(summary, dict) or "decisions" not in summary or "settings" not in summary:
        return None
    parts = ["<h2>Experiment</h2>", html_table(decision_table(summary["decisions"]))]
    failed = summary.get("failed_settings") or []
    if failed:
        parts.append(f"<p class='bad'>no start came up for: {html.escape(', '.join(failed))}</p>")
    shown = {(d["concurrency"], d["metric"]) for d in summary["decisions"]}
    plots = [svg for c, m in sorted(shown) if (svg := _plot(summary, c, m))]
    if plots:
        parts.append(f"<div class='plots'>{''.join(plots)}</div>")
    for metric in sorted({m for _, m in shown} | {"output_tok_s", "ttft_ms.p99"}):
        parts.append(html_table(level_table(summary["settings"], metric)))
    if summary.get("invalid_levels"):
        items = "".join(
            f"<li>{html.escape(r['setting'])} start {r['start'] + 1} C={r['concurrency']}: "
            f"{html.escape('; '.join(r['reasons']))}</li>"
            for r in summary["invalid_levels"]
        )
        parts.append(f"<h3>Levels left out (invalid)</h3><ul>{items}</ul>")
    parts.append(html_table(starts_table(summary["settings"])))
    return "".join(parts)
