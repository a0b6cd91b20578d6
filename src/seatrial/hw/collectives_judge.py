"""Verdict of the collectives trial (over all selected GPUs, so ``gpu`` is null).

UNAVAILABLE with fewer than two GPUs; FAIL when any op at any size returned a wrong result;
PASS otherwise. ``evidence.busbw_gbps`` maps op -> message size in bytes -> bus bandwidth (GB/s).
"""

from __future__ import annotations

from typing import Any

from seatrial.runs.result import TrialResult, because
from seatrial.verdict import Verdict


def judge_collectives(rows: list[dict[str, Any]], world: int, backend: str) -> TrialResult:
    busbw: dict[str, dict[str, float]] = {}
    for row in rows:
        busbw.setdefault(row["op"], {})[str(row["size_bytes"])] = row["busbw_gbps"]
    evidence = {"world_size": world, "backend": backend, "busbw_gbps": busbw, "results": rows}
    wrong = [f"{r['op']} {r['size_bytes']} B" for r in rows if not r["correct"]]
    if wrong:
        reason = "wrong result: " + ", ".join(wrong)
        return TrialResult(
            name="collectives", gpu=None, verdict=Verdict.FAIL, reasons=because(reason), evidence=evidence
        )
    return TrialResult(name="collectives", gpu=None, verdict=Verdict.PASS, evidence=evidence)


def unavailable_collectives(selected: int) -> TrialResult:
    reason = f"collectives need at least 2 GPUs; {selected} selected"
    return TrialResult(
        name="collectives",
        gpu=None,
        verdict=Verdict.UNAVAILABLE,
        reasons=because(reason),
        evidence={"selected": selected},
    )
