"""The tables of ``sync`` and ``doctor`` summaries as text cells (console and report show the same)."""

from __future__ import annotations

import json
from typing import Any

from seatrial.runs.levels import num
from seatrial.runs.table import Table


def sync_table(summary: dict[str, Any]) -> Table:
    rows, ok = [], []
    for d in summary["destinations"]:
        streams = d.get("streams") or []
        sent = sum(s["done_bytes"] for s in streams)
        rates = ", ".join(num(s["mb_s"], "{:,.0f}") for s in streams if s["name"] != "small files")
        state = "identical" if d["ok"] else (d.get("error") or f"{len(d.get('differences', []))} differences")
        rows.append([d["dest"], "yes" if d["ok"] else "NO", f"{sent:,}" if streams else "–", rates or "–",
                     num(d.get("transfer_s")), num(d.get("verify_s")), state])  # fmt: skip
        ok.append(d["ok"])
    cols = ("destination", "same as SRC", "bytes sent", "MB/s per stream", "transfer s", "verify s", "result")
    return Table(f"seatrial sync {summary['src']} (verify {summary['verify']})", cols, rows, ok)


def doctor_table(summary: dict[str, Any]) -> Table:
    """Differing and unreadable items, one row each, one column per node; identical items folded."""
    nodes = summary["nodes"]
    rows, ok = [], []
    same = 0
    for item in summary["items"]:
        if item["verdict"] == "PASS":
            same += 1
            continue
        values = item["evidence"]["values"]
        rows.append([item["name"], item["verdict"], *(_cell(values.get(n)) for n in nodes)])
        ok.append(item["verdict"] != "FAIL")
    rows.append([f"{same} items", "PASS", *(["identical"] * len(nodes))])
    ok.append(True)
    return Table("seatrial doctor", ("item", "verdict", *nodes), rows, ok)


def _cell(v: Any) -> str:
    if isinstance(v, dict) and set(v) == {"unavailable"}:
        return f"n/a: {v['unavailable']}"
    text = "unset" if v is None else (v if isinstance(v, str) else json.dumps(v, sort_keys=True))
    return text if len(text) <= 70 else text[:67] + "..."
