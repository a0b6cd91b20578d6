"""``seatrial io``'s rows as one table (console and report): node, trial, verdict, the key figures (medians of
the repeats, with their spread) and the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seatrial.runs.summaries.io import IoRow
from seatrial.runs.table import Table
from seatrial.runs.verdicts import Verdict

IO_COLUMNS = ("node", "trial", "verdict", "figures (median of repeats)", "reason")
BAD = (Verdict.FAIL, Verdict.UNSTABLE, Verdict.REVIEW_REQUIRED, Verdict.INCONCLUSIVE)


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:,.3g}" if isinstance(v, float) else str(v)


def _levels(f: dict[str, Any], pre: tuple[str, str]) -> str:
    return "; ".join(f"C={lv['concurrency']}: " + ", ".join(f"{p} p50/p95/p99 {_num(lv.get(p + '_p50_ms'))}/"
                     f"{_num(lv.get(p + '_p95_ms'))}/{_num(lv.get(p + '_p99_ms'))} ms" for p in pre)
                     for lv in f.get("levels", []))  # fmt: skip


#: trial -> its figures in one line ('' when it has none: the row shows its reason only)
FIGURES: dict[str, Callable[[dict[str, Any]], str]] = {
    "net.tcp": lambda f: (
        f"fwd {_num(f.get('forward_gbps'))}, rev {_num(f.get('reverse_gbps'))} Gbit/s of "
        f"{_num(f.get('reference_gbps'))}"
        if "slower_gbps" in f
        else ""
    ),
    "net.nccl": lambda f: (
        f"{f.get('backend')} all-reduce {_num(f.get('allreduce_busbw_gbps'))} GB/s busbw at "
        f"{int(f.get('largest_bytes', 0)) >> 20} MiB, {f.get('ranks')} ranks on {f.get('nodes')} nodes"
        if "allreduce_busbw_gbps" in f
        else ""
    ),
    "storage.read": lambda f: (
        f"seq {_num(f.get('seq_read_gbps'))} GB/s, 4k rand {_num(f.get('rand_read_iops'))} IOPS "
        f"p99 {_num(f.get('rand_read_p99_ms'))} ms"
        if "seq_read_gbps" in f
        else ""
    ),
    "storage.write": lambda f: f"seq {_num(f.get('seq_write_gbps'))} GB/s" if "seq_write_gbps" in f else "",
    "storage.load": lambda f: (
        f"{_num(f.get('load_gbps'))} GB/s, {f.get('shards')} shards, load {_num(f.get('predicted_load_s'))} s"
        if "load_gbps" in f
        else ""
    ),
    "kv.disk": lambda f: (
        f"chunk {f.get('chunk_bytes')} B; " + _levels(f, ("write", "read")) if "levels" in f else ""
    ),
    "kv.object": lambda f: (
        f"object {f.get('object_bytes')} B; " + _levels(f, ("put", "get")) if "levels" in f else ""
    ),
}


def figures_line(row: IoRow) -> str:
    f = row.figures
    if row.trial.startswith("fleet."):
        return (
            f"{_num(f.get('value'))} = {_num(f.get('share_of_median'))} of the median"
            if "share_of_median" in f
            else ""
        )
    text = FIGURES.get(row.trial, lambda _: "")(f)
    cv = (f.get("spread") or {}).get("cv")
    return text + (f" (spread {cv:.0%} over {len(row.runs)})" if text and cv is not None else "")


def io_table(rows: list[IoRow], title: str = "seatrial io") -> Table:
    return Table(title, IO_COLUMNS, [[r.node, r.trial, r.verdict.value, figures_line(r), r.reason or ""] for r in rows],
                 [r.verdict not in BAD for r in rows])  # fmt: skip
