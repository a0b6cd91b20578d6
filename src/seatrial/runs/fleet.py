"""The tables of ``sync`` and ``doctor`` summaries as text cells (console and report show the same)."""

from __future__ import annotations

import json
from typing import Any

from seatrial.runs.levels import num
from seatrial.runs.summaries.fleet import DoctorSummary, SyncDestination, SyncSummary
from seatrial.runs.table import Table


def sync_table(summary: SyncSummary) -> Table:
    rows, ok = [], []
    for d in summary.destinations:
        sent = sum(s.done_bytes for s in d.streams)
        rates = ", ".join(num(s.mb_s, "{:,.0f}") for s in d.streams if s.name != "small files")
        state = _identical(d) if d.ok else (d.error or f"{len(d.differences)} differences")
        rows.append([d.dest, "yes" if d.ok else "NO", f"{sent:,}" if d.streams else "–", rates or "–",
                     num(d.transfer_s), num(d.verify_s), state])  # fmt: skip
        ok.append(d.ok)
    cols = ("destination", "same as SRC", "bytes sent", "MB/s per stream", "transfer s", "verify s", "result")
    return Table(f"seatrial sync {summary.src} (verify {summary.verify})", cols, rows, ok)


def _identical(d: SyncDestination) -> str:
    """ "identical", with what it rests on where that is less than every byte."""
    if "tensor data not hashed" not in (d.compared or ""):
        return "identical"
    size_only = len(d.size_only)
    plural = "file" if size_only == 1 else "files"
    return "identical (key: tensor data not hashed" + (
        f"; {size_only} {plural} by size only)" if size_only else ")"
    )


def doctor_table(summary: DoctorSummary) -> Table:
    """Differing and unreadable items, one row each, one column per node; identical items folded; a node
    that could not be reached has a row of its own."""
    nodes, down = summary.nodes, summary.unreachable
    rows, ok = [], []
    if down:
        rows.append(["reached", "FAIL", *("NO: " + _short(down[n]) if n in down else "yes" for n in nodes)])
        ok.append(False)
    same = 0
    for item in summary.items:
        if item["verdict"] == "PASS":
            same += 1
            continue
        values = item["evidence"]["values"]
        rows.append(
            [item["name"], item["verdict"], *("–" if n in down else _cell(values.get(n)) for n in nodes)]
        )
        ok.append(item["verdict"] != "FAIL")
    rows.append([f"{same} items", "PASS", *("–" if n in down else "identical" for n in nodes)])
    ok.append(True)
    return Table("seatrial doctor", ("item", "verdict", *nodes), rows, ok)


def _cell(v: Any) -> str:
    if isinstance(v, dict) and set(v) == {"unavailable"}:
        return f"n/a: {v['unavailable']}"
    if isinstance(v, dict) and "sha256" in v:  # an environment variable: its value only where not secret
        return (
            _short(v["value"]) if "value" in v else f"sha256 {v['sha256'][:12]} (hidden: {v.get('hidden')})"
        )
    if isinstance(v, list) and all(isinstance(x, str) for x in v):  # sentences (changed since sync)
        return _short("; ".join(v) or "unchanged")
    text = "unset" if v is None else (v if isinstance(v, str) else json.dumps(v, sort_keys=True))
    return _short(text)


def _short(text: str) -> str:
    return text if len(text) <= 70 else text[:67] + "..."
