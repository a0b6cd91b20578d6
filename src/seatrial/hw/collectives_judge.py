"""Verdict of the collectives trial (over all selected GPUs, so ``gpu`` is null).

UNAVAILABLE with fewer than two GPUs; FAIL when any op at any size on any group returned a wrong result;
REVIEW_REQUIRED when an op's busbw at the largest size falls, on a larger group, more than ``margin``
below the best of the smaller groups (seed 004's "TP2 a little off, TP4 slow, TP8 very slow": busbw is
normalised for the group's size, so a healthy switch keeps it level or rising); PASS otherwise.

Evidence: ``busbw_gbps`` maps op -> message size in bytes -> bus bandwidth (GB/s) on all the GPUs;
``by_group`` maps the group's size -> op -> ``{"size_bytes", "busbw_gbps"}`` at the largest size;
``falls_at_ranks`` maps op -> the first group size where busbw fell (null: it did not).
"""

from __future__ import annotations

from typing import Any

from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict


def at_largest(rows: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    """Group size -> op -> the row's size and busbw at the largest size measured."""
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for r in rows:
        best = out.setdefault(r["ranks"], {}).get(r["op"])
        if best is None or r["size_bytes"] > best["size_bytes"]:
            out[r["ranks"]][r["op"]] = {"size_bytes": r["size_bytes"], "busbw_gbps": r["busbw_gbps"]}
    return dict(sorted(out.items()))


def falls(by_group: dict[int, dict[str, dict[str, Any]]], margin: float) -> dict[str, tuple[int, str] | None]:
    """op -> (the first group size whose busbw is more than ``margin`` below the best smaller group's,
    the sentence saying so), or None."""
    out: dict[str, tuple[int, str] | None] = {}
    ops = dict.fromkeys(op for per_op in by_group.values() for op in per_op)
    for op in ops:
        out[op], best = None, None
        for ranks, per_op in by_group.items():
            if op not in per_op:
                continue
            bw, size = per_op[op]["busbw_gbps"], per_op[op]["size_bytes"]
            if best is not None and bw < (1 - margin) * best[1]:
                out[op] = (ranks, f"{op} busbw at {_size(size)} falls at {ranks} ranks: {bw:.1f} GB/s, "
                                  f"{bw / best[1]:.0%} of {best[1]:.1f} GB/s on {best[0]} ranks (more than "
                                  f"{margin:.0%} below)")  # fmt: skip
                break
            if best is None or bw > best[1]:
                best = (ranks, bw)
    return out


def judge_collectives(rows: list[dict[str, Any]], world: int, backend: str, margin: float) -> TrialResult:
    busbw: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["ranks"] == world:
            busbw.setdefault(row["op"], {})[str(row["size_bytes"])] = row["busbw_gbps"]
    by_group = at_largest(rows)
    fell = falls(by_group, margin)
    evidence = {
        "world_size": world,
        "backend": backend,
        "busbw_gbps": busbw,
        "by_group": {str(k): v for k, v in by_group.items()},
        "falls_at_ranks": {op: f[0] if f else None for op, f in fell.items()},
        "margin": margin,
        "results": rows,
    }
    wrong = [f"{r['op']} {r['size_bytes']} B on {r['ranks']} ranks" for r in rows if not r["correct"]]
    if wrong:
        reason = "wrong result: " + ", ".join(wrong)
        return TrialResult(
            name="collectives", gpu=None, verdict=Verdict.FAIL, reasons=because(reason), evidence=evidence
        )
    slow = [f[1] for f in fell.values() if f]
    if slow:
        return TrialResult(
            name="collectives", gpu=None, verdict=Verdict.REVIEW_REQUIRED, reasons=slow, evidence=evidence
        )
    return TrialResult(name="collectives", gpu=None, verdict=Verdict.PASS, evidence=evidence)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def unavailable_collectives(selected: int) -> TrialResult:
    reason = f"collectives need at least 2 GPUs; {selected} selected"
    return TrialResult(
        name="collectives",
        gpu=None,
        verdict=Verdict.UNAVAILABLE,
        reasons=because(reason),
        evidence={"selected": selected},
    )
