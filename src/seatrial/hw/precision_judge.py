"""Verdict of a precision trial on one GPU from its variants' evidence.

Order of precedence: FAIL (numerical mismatch or an error while running) > REVIEW_REQUIRED (no
kernel in the profiler trace proves the format ran) > UNSUPPORTED (the library refused a variant,
with its message) > PASS. ``tflops`` is the slowest variant's; ``kernels`` is every kernel seen.
"""

from __future__ import annotations

from typing import Any

from seatrial.hw.precision import REL_TOLERANCE
from seatrial.hw.profiling import path_kernels
from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict

FORMATS = {"precision.bf16": "bf16", "precision.fp8": "fp8", "precision.fp4": "fp4"}


def judge_precision(
    trial: str, gpu: int | None, variants: list[dict[str, Any]], peak_tflops: float | None
) -> TrialResult:
    fmt = FORMATS[trial]
    ran = [v for v in variants if "unsupported" not in v]
    kernels = sorted({k for v in ran for k in v["kernels"]})
    tflops = min((v["tflops"] for v in ran), default=None)
    evidence: dict[str, Any] = {
        "format": fmt,
        "kernels": kernels,
        "tflops": tflops,
        "tflops_peak": peak_tflops,
        "peak_fraction": round(tflops / peak_tflops, 4) if tflops and peak_tflops else None,
        "tolerance": REL_TOLERANCE,
        "variants": [{k: val for k, val in v.items() if k != "trace"} for v in variants],
    }
    if ran:
        evidence["window"] = {
            "start_unix_s": min(v["window"]["start_unix_s"] for v in ran),
            "end_unix_s": max(v["window"]["end_unix_s"] for v in ran),
        }
    verdict, reason = _verdict(fmt, variants, ran)
    return TrialResult(name=trial, gpu=gpu, verdict=verdict, reasons=because(reason), evidence=evidence)


def _verdict(
    fmt: str, variants: list[dict[str, Any]], ran: list[dict[str, Any]]
) -> tuple[Verdict, str | None]:
    errors = {v["variant"]: max(v["rel_error_first"], v["rel_error_last"]) for v in ran}
    bad = [
        f"{name}: relative error {err:.3g} > {REL_TOLERANCE}"
        for name, err in errors.items()
        if not err <= REL_TOLERANCE
    ]
    if bad:
        return Verdict.FAIL, "; ".join(bad)
    unproven = [v["variant"] for v in ran if not path_kernels(fmt, v["kernels"])]
    if unproven:
        return Verdict.REVIEW_REQUIRED, f"no {fmt} kernel in the profiler trace of {', '.join(unproven)}"
    refused = [f"{v['variant']}: {v['unsupported']}" for v in variants if "unsupported" in v]
    if refused:
        return Verdict.UNSUPPORTED, "; ".join(refused)
    return Verdict.PASS, None


def judge_error(trial: str, gpu: int | None, exc: BaseException) -> TrialResult:
    """FAIL for a GPU whose run raised something other than a library refusal (CUDA error, OOM ...)."""
    reason = f"{type(exc).__name__}: {exc}"
    return TrialResult(
        name=trial, gpu=gpu, verdict=Verdict.FAIL, reasons=because(reason), evidence={"error": reason}
    )
