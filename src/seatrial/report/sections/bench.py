"""Bench section: per-level table, throughput against concurrency, latency percentiles."""

from __future__ import annotations

import html
from typing import Any

from seatrial.load.metrics import engine_means_shown, level_label
from seatrial.report.plots import line_svg


def _f(v: Any, fmt: str = "{:,.1f}") -> str:
    return "–" if v is None else fmt.format(v)


def _table(levels: list[dict[str, Any]]) -> str:
    head = (
        "level",
        "ok",
        "failed",
        "out tok/s",
        "per-user tok/s",
        "TTFT p50",
        "TTFT p99",
        "TPOT p50",
        "ITL p50",
        "ITL p99",
        "E2E p50",
        "running max",
        "waiting max",
        "KV max",
        "valid",
    )
    rows = []
    for lv in levels:
        srv = lv["server"]
        cells = [
            level_label(lv),
            lv["requests_ok"],
            lv["requests_failed"],
            _f(lv["output_tok_s"]),
            _f(lv["per_user_output_tok_s"]),
            _f(lv["ttft_ms"]["p50"]),
            _f(lv["ttft_ms"]["p99"]),
            _f(lv["tpot_ms"]["p50"]),
            _f(lv["itl_ms"]["p50"]),
            _f(lv["itl_ms"]["p99"]),
            _f(lv["e2e_ms"]["p50"]),
            _f(srv.get("running_max"), "{:.0f}"),
            _f(srv.get("waiting_max"), "{:.0f}"),
            _f(srv.get("kv_cache_usage_max"), "{:.1%}"),
            "yes"
            if lv["valid"]
            else "<span class='bad'>NO: " + html.escape("; ".join(lv["invalid_reasons"])) + "</span>",
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def _engine_view(levels: list[dict[str, Any]]) -> str:
    """Client mean latencies beside the engine's own histograms' means; empty when it exports none."""
    shown = engine_means_shown(levels)
    if not shown:
        return ""
    head = "".join(f"<th>{name} client / engine</th>" for name, _, _ in shown)
    rows = "".join(
        f"<tr><td>{level_label(lv)}</td>"
        + "".join(
            f"<td>{_f(lv[key].get('mean'))} / {_f(lv['server'].get(f'{h}_ms_mean'))}</td>"
            for _, key, h in shown
        )
        + "</tr>"
        for lv in levels
    )
    return f"<h3>Mean latency (ms): client / engine's own histograms</h3><table><tr><th>level</th>{head}</tr>{rows}</table>"


def _notes(levels: list[dict[str, Any]]) -> str:
    """The client's self-check notes (a stalled client, merged events, ITL per chunk), per level."""
    items = [
        f"<li>{level_label(lv)}: {html.escape(lv['client_timing']['note'])}</li>"
        for lv in levels
        if (lv.get("client_timing") or {}).get("note")
    ]
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
        f"{html.escape(str(summary.get('endpoint', '')))}</p>{_table(levels)}"
        f"{_engine_view(levels)}{_notes(levels)}<div class='plots'>{''.join(plots)}</div>"
    )
