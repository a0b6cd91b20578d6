"""``precision.bf16`` / ``precision.fp8`` / ``precision.fp4``: each path runs on every selected GPU at once.

Per GPU and variant: build operands, run one product and compare it with the FP32 reference of the
dequantized inputs, record the kernels it ran (profiler), then run back to back for its share of the
duration and check the last output again. A library call that raises is UNSUPPORTED with the library's
message: the path is never replaced by another.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from seatrial.hw.loops import run_per_device, synchronize, timed_loop
from seatrial.hw.matmul import VARIANTS, Operands, build, relative_error
from seatrial.hw.profiling import kernel_names, record_trace

#: Largest accepted ||out - ref||_F / ||ref||_F. A correct kernel shows BF16 output rounding (~2e-3);
#: a wrong one shows errors of order 1.
REL_TOLERANCE = 1e-2
#: Exceptions through which torch reports a path it cannot run (dtype, scaling recipe, architecture).
LIBRARY_REFUSALS = (RuntimeError, ValueError, NotImplementedError, TypeError, AttributeError)


def prepare_variant(variant: str, device: torch.device, size: int) -> tuple[dict[str, Any], Operands | None]:
    """Build operands, check one product against the reference and record its kernels.

    Returns (evidence, operands), or (evidence with ``unsupported`` = the library's message, None).
    Runs in the main thread: torch.profiler must not be started from worker threads.
    """
    evidence: dict[str, Any] = {"variant": variant, "shape": [size, size, size]}
    try:
        ops = build(variant, size, device)
        out = ops.step()
        synchronize(device)
    except LIBRARY_REFUSALS as exc:
        if _is_fault(exc):
            raise
        return {**evidence, "unsupported": f"{type(exc).__name__}: {exc}"}, None
    evidence["rel_error_first"] = relative_error(out, ops.reference)
    trace = record_trace(ops.step, device)
    evidence["trace"] = trace
    evidence["kernels"] = kernel_names(trace, "CUDA" if device.type == "cuda" else "CPU", device.index)
    return evidence, ops


def measure_variant(
    evidence: dict[str, Any], ops: Operands, device: torch.device, duration_s: float
) -> dict[str, Any]:
    """Run the product back to back for ``duration_s``; add throughput, window and the last output's error."""
    loop = timed_loop(ops.step, device, duration_s)
    return {
        **evidence,
        "rel_error_last": relative_error(loop.last, ops.reference),
        "iterations": loop.iterations,
        "elapsed_s": round(loop.elapsed_s, 4),
        "tflops": round(ops.flops * loop.iterations / loop.elapsed_s / 1e12, 2),
        "window": {"start_unix_s": loop.start_unix_s, "end_unix_s": loop.end_unix_s},
    }


def run_variant(variant: str, device: torch.device, size: int, duration_s: float) -> dict[str, Any]:
    """Prepare and measure one variant on one device (what each GPU does inside a precision trial)."""
    evidence, ops = prepare_variant(variant, device, size)
    return evidence if ops is None else measure_variant(evidence, ops, device, duration_s)


def _is_fault(exc: BaseException) -> bool:
    """Out of memory and CUDA errors are faults of the run, not a refusal of the path, except
    ``*_NOT_SUPPORTED`` (cuBLAS has no kernel for this path on this GPU: that is the library's refusal)."""
    text = str(exc)
    return isinstance(exc, torch.OutOfMemoryError) or ("CUDA error" in text and "NOT_SUPPORTED" not in text)


def run_precision(
    trial: str, devices: dict[int, torch.device], size: int, duration_s: float
) -> dict[int, list[dict[str, Any]] | BaseException]:
    """Run every variant of ``trial`` on all ``devices`` at once, each for duration_s / len(variants).

    Preparation (reference check, profiler) is done GPU by GPU in this thread; the timed loops of a
    variant start together on every GPU (one thread per GPU, behind a barrier).
    """
    variants = VARIANTS[trial]
    share_s = duration_s / len(variants)
    prepared: dict[int, list[tuple[dict[str, Any], Operands | None]]] = {}
    failed: dict[int, list[dict[str, Any]] | BaseException] = {}
    for gpu, device in devices.items():
        try:
            prepared[gpu] = [prepare_variant(v, device, size) for v in variants]
        except Exception as exc:
            failed[gpu] = exc

    def work(gpu: int, device: torch.device, barrier: threading.Barrier) -> list[dict[str, Any]]:
        results = []
        for evidence, ops in prepared.pop(gpu):
            barrier.wait()
            results.append(evidence if ops is None else measure_variant(evidence, ops, device, share_s))
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return results

    ready = {g: d for g, d in devices.items() if g in prepared}
    return {**failed, **(run_per_device(work, ready) if ready else {})}
