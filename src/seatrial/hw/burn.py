"""``burn``: sustained BF16 matrix products on every selected GPU at once, gpu-burn style.

Each GPU computes C = A @ B over and over; after every chunk (about a quarter second) the latest C is
compared element by element with the first one. The same product of the same inputs on the same GPU
must be bit-identical, so any differing element is a computation error.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from seatrial.hw.loops import run_per_device, synchronize, timed_loop


def burn_one(
    device: torch.device, size: int, duration_s: float, barrier: threading.Barrier | None
) -> dict[str, Any]:
    """Evidence of one GPU's burn: iterations, TFLOP/s, comparisons made and elements that differed."""
    gen = torch.Generator(device=device).manual_seed(1234)
    a = torch.randn(size, size, generator=gen, device=device).to(torch.bfloat16)
    b = torch.randn(size, size, generator=gen, device=device).to(torch.bfloat16)
    first = torch.mm(a, b)
    synchronize(device)
    counts = {"checks": 0, "mismatched_elements": 0}

    def compare(latest: torch.Tensor) -> None:
        counts["checks"] += 1
        counts["mismatched_elements"] += int((latest != first).sum())

    if barrier is not None:
        barrier.wait()
    loop = timed_loop(lambda: torch.mm(a, b), device, duration_s, after_chunk=compare)
    return {
        "shape": [size, size, size],
        "iterations": loop.iterations,
        "elapsed_s": round(loop.elapsed_s, 4),
        "tflops": round(2 * size**3 * loop.iterations / loop.elapsed_s / 1e12, 2),
        **counts,
        "window": {"start_unix_s": loop.start_unix_s, "end_unix_s": loop.end_unix_s},
    }


def run_burn(
    devices: dict[int, torch.device], size: int, duration_s: float
) -> dict[int, dict[str, Any] | BaseException]:
    """Burn all ``devices`` at once for ``duration_s``."""
    return run_per_device(lambda gpu, device, barrier: burn_one(device, size, duration_s, barrier), devices)
