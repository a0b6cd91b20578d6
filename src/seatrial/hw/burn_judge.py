"""Verdict of the burn trial on one GPU, from its compute evidence and its telemetry samples.

FAIL on: a differing element, an abnormal clock-event reason in any sample (hardware, thermal or
power-brake slowdown; power cap alone is normal), or throughput below ``min_share`` of the best GPU
(gpu-fryer style). REVIEW_REQUIRED when the clock-event reasons could not be read at all.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from seatrial.hw.telemetry import abnormal_clock_events, decode_clock_events
from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict


def summarize_samples(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Min/max of each telemetry field over the samples, and how often each clock-event reason was set."""
    summary: dict[str, Any] = {"sample_count": len(samples)}
    for key in ("sm_clock_mhz", "mem_clock_mhz", "gpu_temp_c", "hbm_temp_c", "power_w", "power_limit_w"):
        values = [s[key] for s in samples if s.get(key) is not None]
        summary[key] = {"min": min(values), "max": max(values)} if values else None
    reasons: Counter[str] = Counter()
    for s in samples:
        if s.get("clock_event_reasons") is not None:
            reasons.update(decode_clock_events(int(s["clock_event_reasons"])))
    summary["clock_events_seen"] = dict(sorted(reasons.items()))
    return summary


def judge_burn(
    gpu: int,
    compute: dict[str, Any],
    samples: list[dict[str, Any]],
    telemetry_unavailable: dict[str, str],
    best_tflops: float,
    min_share: float,
) -> TrialResult:
    share = compute["tflops"] / best_tflops if best_tflops > 0 else 1.0  # all at zero: no relative deficit
    evidence = {
        **compute,
        "share_of_best": round(share, 4),
        "min_share": min_share,
        "telemetry": summarize_samples(samples),
        "telemetry_unavailable": telemetry_unavailable,
        "samples": samples,
    }
    problems: list[str] = []
    if compute["mismatched_elements"]:
        problems.append(f"{compute['mismatched_elements']} elements differed over {compute['checks']} checks")
    abnormal: Counter[str] = Counter()
    for s in samples:
        if s.get("clock_event_reasons") is not None:
            abnormal.update(abnormal_clock_events(int(s["clock_event_reasons"])))
    if abnormal:
        problems.append(
            "clock slowdown: " + ", ".join(f"{k} in {n} samples" for k, n in sorted(abnormal.items()))
        )
    if share < min_share:
        problems.append(
            f"throughput {compute['tflops']} TFLOP/s is {share:.1%} of the best GPU (< {min_share:.0%})"
        )
    if problems:
        return TrialResult(
            name="burn",
            gpu=gpu,
            verdict=Verdict.FAIL,
            reasons=because("; ".join(problems)),
            evidence=evidence,
        )
    if not any(s.get("clock_event_reasons") is not None for s in samples):
        reason = "clock-event reasons unavailable: " + telemetry_unavailable.get(
            "clock_event_reasons", "no samples"
        )
        return TrialResult(
            name="burn", gpu=gpu, verdict=Verdict.REVIEW_REQUIRED, reasons=because(reason), evidence=evidence
        )
    return TrialResult(name="burn", gpu=gpu, verdict=Verdict.PASS, evidence=evidence)
