"""The tables of a ``seatrial compare`` summary as text cells (console and report show the same)."""

from __future__ import annotations

from typing import Any

from seatrial.runs.levels import num
from seatrial.runs.table import Table

COLUMNS = ("workload", "level", "candidate", "metric", "baseline", "candidate value", "ratio", "gain %",
           "95% interval %", "verdict", "starts")  # fmt: skip


def comparison_table(summary: dict[str, Any]) -> Table:
    rows, ok = [], []
    for c in summary["comparisons"]:
        for m in c["metrics"]:
            lo, hi = m["ci_pct"]
            rows.append([
                c["workload"], c["level"], c["candidate"], m["metric"], num(m["baseline"]), num(m["candidate"]),
                num(m["ratio"], "{:.3f}"), num(m["gain_pct"], "{:+.1f}"),
                f"[{num(lo, '{:+.1f}')}, {num(hi, '{:+.1f}')}]", m["verdict"], "+".join(map(str, m["starts"])),
            ])  # fmt: skip
            ok.append(m["verdict"] != "REGRESSED")
    title = f"Compared with {summary.get('reference') or 'deployment ' + summary['deployment']['names'][1]}"
    return Table(title, COLUMNS, rows, ok)


def deployment_table(summary: dict[str, Any]) -> Table | None:
    dep = summary.get("deployment")
    if not dep:
        return None
    a, b = dep["names"]
    rows = [
        [p["workload"], p["level"], num(p["prefill_throughput_ratio"], "{:.2f}x"), num(p["ttft_ratio"], "{:.2f}x"),
         num(p["tpot_ratio"], "{:.2f}x"), num(p["output_tok_s_ratio"], "{:.2f}x")]
        for p in dep["phases"]
    ]  # fmt: skip
    cols = (
        "workload",
        "level",
        f"prompt tok/s {a}/{b}",
        f"TTFT {b}/{a}",
        f"TPOT {b}/{a}",
        f"output tok/s {a}/{b}",
    )
    return Table(f"Per phase: how many times faster {a} is than {b}", cols, rows, [True] * len(rows))


def split_table(summary: dict[str, Any]) -> Table | None:
    dep = summary.get("deployment")
    if not dep or not dep["split"]:
        return None
    rows = [[s["level"], num(s["prefill_ratio"], "{:.2f}x"), num(s["precision_share"], "{:.2f}x"),
             num(s["topology_share"], "{:.2f}x")] for s in dep["split"]]  # fmt: skip
    cols = (
        "prefill level",
        "prefill ratio",
        "precision share (decode TPOT ratio)",
        "topology share (the rest)",
    )
    return Table("Prefill gap split (an estimate)", cols, rows, [True] * len(rows))
