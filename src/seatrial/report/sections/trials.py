"""Trials section of ``seatrial accept``: the verdict table, then each trial's plots and evidence."""

from __future__ import annotations

import html
from typing import Any

from seatrial.report.plots import Series, bars_svg, line_svg
from seatrial.report.tables import html_table
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.verdicts import trial_table


def _e(v: Any) -> str:
    return html.escape(str(v))


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


#: trial -> its plots from its evidence (a trial without an entry shows its row in the table only; the trials
#: are seatrial.trials.registry's)
PLOTS = {
    "saturation": saturation_plots,
    "mixed": mixed_plots,
    "context": context_plots,
    "prefix-cache": prefix_plots,
}


def section(run: SummaryModel) -> str | None:
    if not isinstance(run, AcceptSummary) or not run.trials:
        return None
    rows = [t.to_json() for t in run.trials]
    parts = [
        "<h2>Acceptance trials</h2>",
        f"<p class='meta'>model {_e(run.model or '')} · {_e(run.url)} · scale {_e(run.scale)} · passed: "
        f"{_e(run.passed)}</p>",
        html_table(trial_table(rows, "Trials")),
    ]
    for t in run.trials:
        plots = PLOTS.get(t.name, lambda ev: [])(t.evidence)
        if plots:
            parts.append(f"<h3>{_e(t.name)}</h3><div class='plots'>{''.join(plots)}</div>")
    return "".join(parts)
