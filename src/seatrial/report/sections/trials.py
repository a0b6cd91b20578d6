"""Trials section of ``seatrial accept``: the verdict table, then each trial's plots and evidence."""

from __future__ import annotations

import html
from typing import Any

from seatrial.report.plots import Series, bars_svg, line_svg


def _e(v: Any) -> str:
    return html.escape(str(v))


def _word(v: str | None) -> str:
    return "–" if v is None else f"<span class='v-{_e(v)}'>{_e(v)}</span>"


def verdict_table(trials: list[dict[str, Any]]) -> str:
    head = ("trial", "verdict", "functional", "performance", "classification", "samples", "why")
    rows = []
    for t in trials:
        samples = ", ".join(f"{_e(k)}={_e(v)}" for k, v in t.get("samples", {}).items())
        cells = [
            _e(t["name"]),
            _word(t["verdict"]),
            _word(t.get("functional")),
            _e(t.get("performance") or "–"),
            _e(t.get("classification") or "–"),
            samples,
            "<br>".join(_e(r) for r in t.get("reasons", [])),
        ]
        rows.append("<tr>" + "".join(f"<td class='l'>{c}</td>" for c in cells) + "</tr>")
    th = "".join(f"<th class='l'>{h}</th>" for h in head)
    return f"<table><tr>{th}</tr>{''.join(rows)}</table>"


def saturation_plots(ev: dict[str, Any]) -> list[str]:
    steps = ev.get("steps") or []
    if not steps:
        return []
    x = [s["concurrency"] for s in steps]
    return [
        line_svg(
            x,
            {"output tok/s": [s["output_tok_s"] for s in steps]},
            title="Saturation: throughput, running and waiting",
            xlabel="concurrency",
            ylabel="output tok/s",
            logx=len(x) > 2,
            right={
                "running max": [s["running_max"] for s in steps],
                "waiting max": [s["waiting_max"] for s in steps],
            },
            right_label="requests (server)",
        ),
        line_svg(
            x,
            {
                "TTFT p50": [s["ttft_ms_p50"] for s in steps],
                "TTFT p99": [s["ttft_ms_p99"] for s in steps],
                "ITL p99": [s["itl_ms_p99"] for s in steps],
            },
            title="Saturation: TTFT and ITL percentiles",
            xlabel="concurrency",
            ylabel="ms",
            logx=len(x) > 2,
        ),
    ]


def mixed_plots(ev: dict[str, Any]) -> list[str]:
    rounds = ev.get("rounds") or []
    if not rounds:
        return []
    short = {"ISO->MIX": "AB", "MIX->ISO": "BA"}
    labels = [f"R{r['index']} {short.get(r['order'], '?')}" + ("" if r["retained"] else "*") for r in rounds]
    series: Series = {
        "ISO TTFT p50": [r["iso_ttft_ms_p50"] for r in rounds],
        "MIX TTFT p50": [r["mix_ttft_ms_p50"] for r in rounds],
    }
    return [
        bars_svg(
            labels, series, title="Crossover rounds (AB = ISO->MIX, BA = MIX->ISO, * discarded)", ylabel="ms"
        )
    ]


def context_plots(ev: dict[str, Any]) -> list[str]:
    parts = [ev[k] for k in ("short", "long") if isinstance(ev.get(k), dict) and "ttft_ms_p50" in ev[k]]
    if not parts:
        return []
    labels = [f"{p['input_len']} tokens" for p in parts]
    series: Series = {
        "TTFT p50": [p["ttft_ms_p50"]["value"] for p in parts],
        "ITL p99": [p["itl_ms_p99"]["value"] for p in parts],
    }
    return [bars_svg(labels, series, title="Context length: TTFT and ITL", ylabel="ms")]


def prefix_plots(ev: dict[str, Any]) -> list[str]:
    shared, unique = ev.get("ttft_ms_shared") or [], ev.get("ttft_ms_unique") or []
    if not shared:
        return []
    x = list(range(1, len(shared) + 1))
    return [
        line_svg(
            x,
            {"shared prefix": shared, "own prefix": unique},
            title="Prefix cache: TTFT per question, with and without a shared prefix",
            xlabel="question",
            ylabel="TTFT ms",
        )
    ]


PLOTS = {
    "saturation": saturation_plots,
    "mixed": mixed_plots,
    "context": context_plots,
    "prefix-cache": prefix_plots,
}


def section(summary: dict[str, Any]) -> str | None:
    trials = summary.get("trials")
    if not trials or "gpus" in summary:  # a `seatrial hw` sheet has trials too: the hw section shows it
        return None
    parts = [
        "<h2>Acceptance trials</h2>",
        f"<p class='meta'>model {_e(summary.get('model', ''))} · {_e(summary.get('url', ''))} · scale "
        f"{_e(summary.get('scale', ''))} · passed: {_e(summary.get('passed'))}</p>",
        verdict_table(trials),
    ]
    for t in trials:
        plots = PLOTS.get(t["name"], lambda ev: [])(t.get("evidence", {}))
        if plots:
            parts.append(f"<h3>{_e(t['name'])}</h3><div class='plots'>{''.join(plots)}</div>")
    return "".join(parts)
