"""Benchmark: the converter's FP8 quantize (65,536-entry lookup; compiled and numpy) against torch's cast,
on one 64 MiB BF16 shard.

torch path: ``bf16.float() / scale``, clamp to +-448, ``.to(torch.float8_e4m3fn)`` in cache-sized pieces.
Both must give the same bytes; prints CPU seconds per GB of source for each and torch's import cost,
which a ``seatrial convert`` process would pay once. Run:
``nice -n 10 env PYTHONPATH=src python benchmarks/convert_quantize_paths.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from seatrial.checkpoint.convert import kernels
from seatrial.checkpoint.convert.scale import fp8_lut, fp8_scale, max_abs, quantize_raw

ELEMENTS = 32 << 20  # one 64 MiB BF16 shard
PIECES = (1 << 18, 1 << 20, ELEMENTS)


def cpu_s_per_gb(fn: Callable[[], np.ndarray], repeats: int = 3) -> tuple[float, np.ndarray]:
    """Least process CPU seconds (all threads) of ``fn`` over ``repeats``, per GB of BF16 source."""
    best, result = float("inf"), np.empty(0)
    for _ in range(repeats):
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
    return best / (ELEMENTS * 2 / 1e9), result


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.standard_normal(ELEMENTS, dtype=np.float32) * np.float32(0.02)
    raw = (values.view(np.uint32) >> 16).astype(np.uint16)  # BF16 storage (truncated float32)
    scale = fp8_scale(max_abs(raw, "BF16"))
    lut, out = fp8_lut("BF16", scale), np.empty(ELEMENTS, np.uint8)
    compiled, kernels._C = kernels._C, None
    numpy_cpu, reference = cpu_s_per_gb(lambda: quantize_raw(raw, "BF16", scale, lut, out).copy())
    kernels._C = compiled
    print(f"numpy lookup (seatrial's path without a C compiler): {numpy_cpu:.3f} CPU-s per GB")
    if compiled is not None:
        c_cpu, codes = cpu_s_per_gb(lambda: quantize_raw(raw, "BF16", scale, lut, out).copy())
        same = bool(np.array_equal(codes, reference))
        print(f"compiled lookup (_fp8.c, seatrial's path): {c_cpu:.3f} CPU-s per GB = {numpy_cpu / c_cpu:.2f}x"
              f" numpy's speed; byte-identical: {same}")  # fmt: skip
    start = time.process_time()
    import torch

    print(f"import torch: {time.process_time() - start:.2f} CPU-s (paid once per process)")
    source = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)

    def torch_path(piece: int) -> np.ndarray:
        codes, work = torch.empty(ELEMENTS, dtype=torch.uint8), torch.empty(piece, dtype=torch.float32)
        for begin in range(0, ELEMENTS, piece):
            part = work[: min(piece, ELEMENTS - begin)]
            part.copy_(source[begin : begin + piece]).div_(scale).clamp_(-448.0, 448.0)
            codes[begin : begin + piece].view(torch.float8_e4m3fn).copy_(part)
        return codes.numpy()

    for piece in PIECES:
        cpu, codes = cpu_s_per_gb(lambda piece=piece: torch_path(piece))
        same = bool(np.array_equal(codes, reference))
        print(f"torch, pieces of {piece:>10,} elements: {cpu:.3f} CPU-s per GB = {numpy_cpu / cpu:.2f}x numpy's"
              f" speed; byte-identical: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
