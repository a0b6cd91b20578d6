"""Which kernels a path actually ran, from torch.profiler, and whether they prove the path.

A trace is kept as a list of ``{"name", "device_type", "device_index"}`` events so that the proof
logic (:func:`path_kernels`) can be tested on traces recorded on real GPUs.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch

#: A kernel name proves the path when it matches. CUTLASS and older cuBLAS kernels spell the element
#: types (``e4m3``, ``bf16``); cuBLAS' nvjet kernels carry a type code, ``qq`` for FP8 x FP8 inputs
#: (seen on an H200: ``nvjet_sm90_qqtst_144x128_128x6_1x2_h_bz_coopA_algo2_TNN``). A BF16 product has
#: no lower path to fall back to, so any tensor-core GEMM kernel proves it (``nvjet_sm90_tst_...``).
PATH_KERNEL_PATTERNS: dict[str, re.Pattern[str]] = {
    "bf16": re.compile(r"bf16|bfloat16|nvjet|gemm|xmma|cutlass", re.IGNORECASE),
    "fp8": re.compile(r"e4m3|e5m2|fp8|float8|nvjet_(sm\d+_)?qq", re.IGNORECASE),
    "fp4": re.compile(r"e2m1|fp4|float4", re.IGNORECASE),
}
#: Runtime activities the CUDA trace lists beside kernels.
_NOT_KERNELS = ("Memset", "Memcpy")
#: torch.profiler permits one profiling session per process: GPU threads take turns.
_PROFILER_LOCK = threading.Lock()


def record_trace(step: Callable[[], Any], device: torch.device, iterations: int = 3) -> list[dict[str, Any]]:
    """Run ``step`` under torch.profiler; return the events (CUDA kernels on a GPU, operators on a CPU)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with _PROFILER_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Profiler clears events at the end of each cycle"
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(iterations):
                step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        events = prof.events()
    return [
        {"name": e.name, "device_type": str(e.device_type).split(".")[-1], "device_index": e.device_index}
        for e in events
    ]


def kernel_names(trace: list[dict[str, Any]], device_type: str, device_index: int | None) -> list[str]:
    """Unique names, in order, of ``device_type`` events on that device.

    'CUDA' gives the kernels (runtime memsets and copies left out), 'CPU' the aten operators."""
    names: list[str] = []
    for event in trace:
        if event["device_type"] != device_type:
            continue
        if device_type == "CUDA" and device_index is not None and event["device_index"] != device_index:
            continue
        if device_type == "CPU" and not event["name"].startswith("aten::"):
            continue
        if event["name"].startswith(_NOT_KERNELS):
            continue
        if event["name"] not in names:
            names.append(event["name"])
    return names


def path_kernels(fmt: str, kernels: list[str]) -> list[str]:
    """The kernels whose names prove that format ``fmt`` ('bf16', 'fp8', 'fp4') ran on the GPU."""
    pattern = PATH_KERNEL_PATTERNS[fmt]
    return [k for k in kernels if not k.startswith("aten::") and pattern.search(k)]
