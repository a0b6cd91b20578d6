"""Bench section: per-level table, throughput against concurrency, latency percentiles."""

from __future__ import annotations

import html
from typing import Any

from seatrial.report.plots import line_svg
from seatrial.runs.levels import engine_table, level_notes, level_table
from seatrial.runs.table import Table


def html_table(table: Table, *, heading: str = "h3") -> str:
    """A :class:`seatrial.runs.table.Table` as HTML; rows not ok carry the class ``bad``."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join(
        f"<tr{'' if ok else ' class=bad'}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row, ok in zip(table.rows, table.ok, strict=True)
    )
    return f"<{heading}>{html.escape(table.title)}</{heading}><table><tr>{head}</tr>{rows}</table>"


def _notes(levels: list[dict[str, Any]]) -> str:
    """The client's self-check notes (a stalled client, merged events, ITL per chunk), per level."""
    items = [f"<li>{html.escape(line)}</li>" for line in level_notes(levels)]
    return f"<h3>Client self-checks</h3><ul>{''.join(items)}</ul>" if items else ""


def section(summary: dict[str, Any]) -> str | None:
    levels = summary.get("levels")
    if not levels:
        return None
    x = [lv["concurrency"] for lv in levels]
    plots = [
        line_svg(
            x,
            {"output tok/s": [lv["output_tok_s"] for lv in levels]},
            title="Throughput vs concurrency",
            xlabel="concurrency",
            ylabel="output tok/s",
            logx=len(x) > 2,
            right={"per-user tok/s": [lv["per_user_output_tok_s"] for lv in levels]},
            right_label="per-user tok/s",
        ),
        line_svg(
            x,
            {f"TTFT {p}": [lv["ttft_ms"][p] for lv in levels] for p in ("p50", "p90", "p99")},
            title="TTFT percentiles",
            xlabel="concurrency",
            ylabel="ms",
            logx=len(x) > 2,
        ),
        line_svg(
            x,
            {f"ITL {p}": [lv["itl_ms"][p] for lv in levels] for p in ("p50", "p90", "p99")},
            title="ITL percentiles",
            xlabel="concurrency",
            ylabel="ms",
            logx=len(x) > 2,
        ),
    ]
    wl = html.escape(str(summary.get("workload", "")))
    model = html.escape(str(summary.get("model", "")))
    return (
        f"<h2>Load levels</h2><p class='meta'>model {model} · workload {wl} · endpoint "
        f"{html.escape(str(summary.get('endpoint', '')))}</p>{html_table(level_table(levels))}"
        f"{html_table(engine) if (engine := engine_table(levels)) else ''}{_notes(levels)}"
        f"<div class='plots'>{''.join(plots)}</div>"
    )
