"""Datasheet peak dense tensor-core throughput (TFLOP/s, without sparsity) by GPU name.

Figures are NVIDIA's datasheet numbers halved where the datasheet quotes 2:4 sparsity.
A GPU or format missing here has no peak: the trial then reports ``tflops_peak`` null rather than
a guessed figure.
"""

from __future__ import annotations

#: (lower-case substring of the NVML name, {format: dense TFLOP/s}); first match wins.
PEAKS_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("h200 nvl", {"bf16": 835.5, "fp8": 1670.5}),
    ("gh200", {"bf16": 989.4, "fp8": 1978.9}),
    ("h200", {"bf16": 989.4, "fp8": 1978.9}),
    ("h100 nvl", {"bf16": 835.5, "fp8": 1670.5}),
    ("h100 pcie", {"bf16": 756.5, "fp8": 1513.0}),
    ("h100", {"bf16": 989.4, "fp8": 1978.9}),
    ("b200", {"bf16": 2250.0, "fp8": 4500.0, "fp4": 9000.0}),
)


def peak_tflops(gpu_name: str, fmt: str) -> float | None:
    """Dense datasheet peak of ``fmt`` ('bf16', 'fp8', 'fp4') for ``gpu_name``, or None if unknown."""
    lowered = gpu_name.lower()
    for key, peaks in PEAKS_TFLOPS:
        if key in lowered:
            return peaks.get(fmt)
    return None
