"""The FP8 scale rule, FP8 E4M3FN quantization, and the FP8-with-scale to BF16 restore.

Definitions (seed 000, step 4 of the conversion):
- ``scale = ceil_to_bf16(global_max / 448)``: the smallest BF16 value >= the exact quotient.
  Round-to-nearest can land below the quotient and then ``global_max / scale`` exceeds 448.
- ``q = fp8_e4m3fn(clamp(float32(w) / float32(scale), -448, 448))`` (round to nearest even).
- ``dequant = float32(q) * float32(scale)``.
- lm_head restore: ``bf16(float32(q) * float32(row_scale))``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np

from seatrial.checkpoint.convert.kernels import (
    Measure,
    RowSums,
    codes_finite,
    max_magnitude16,
    merge,
    quantize_rows,
    sums_f32,
)

FP8_E4M3_MAX = 448.0
_BF16 = np.dtype(ml_dtypes.bfloat16)
_FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
#: safetensors dtype -> numpy dtype for the float formats the converter reads.
FLOAT_DTYPES: dict[str, np.dtype] = {
    "BF16": _BF16,
    "F16": np.dtype(np.float16),
    "F32": np.dtype(np.float32),
    "F8_E4M3": _FP8,
}
#: The converter's worker threads (lookups, scans): the compiled loops and numpy release the GIL.
POOL = ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2)), thread_name_prefix="seatrial-fp8")
_PIECE = 1 << 20  # elements per lookup task, in whole rows (numpy path: an 8 MiB index buffer per thread)


def ceil_to_bf16(value: float) -> float:
    """Smallest BF16 value >= ``value`` (``value`` finite and > 0)."""
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"scale quotient must be finite and positive, got {value!r}")
    bits = int(np.array([value], dtype=_BF16).view(np.uint16)[0])
    while _bf16_value(bits) < value:
        bits += 1
    while bits > 0 and _bf16_value(bits - 1) >= value:
        bits -= 1
    return _bf16_value(bits)


def _bf16_value(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint16).view(_BF16)[0])


def fp8_scale(global_max: float) -> float:
    """The stored BF16 scale for a table whose largest magnitude is ``global_max``."""
    return ceil_to_bf16(global_max / FP8_E4M3_MAX)


def to_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Interpret raw unsigned-integer storage of safetensors ``dtype`` as float32 values."""
    if dtype == "BF16":  # BF16 is the upper half of a float32: exact by a shift
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw.view(FLOAT_DTYPES[dtype]).astype(np.float32)


def quantize_f32(values: np.ndarray, scale: float) -> np.ndarray:
    """FP8 E4M3FN codes (uint8) of float32 ``values`` under ``scale``: the formula, element by element."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values.astype(np.float32) / np.float32(scale)
    np.clip(scaled, -FP8_E4M3_MAX, FP8_E4M3_MAX, out=scaled)
    return scaled.astype(_FP8).view(np.uint8)


def pattern_values(dtype: str) -> np.ndarray:
    """float32 value of each of the 65,536 patterns of a 16-bit ``dtype``, indexed by pattern."""
    return to_float32(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16), dtype)


def fp8_lut(dtype: str, scale: float) -> np.ndarray:
    """Lookup table code[pattern] for every 16-bit pattern of ``dtype``: ``quantize_f32`` applied once."""
    return quantize_f32(pattern_values(dtype), scale)


def dequant_lut(scale: float) -> np.ndarray:
    """float32 value of each of the 256 FP8 codes times ``scale``."""
    return np.arange(256, dtype=np.uint8).view(_FP8).astype(np.float32) * np.float32(scale)


def quantize_raw(
    raw: np.ndarray, dtype: str, scale: float, lut: np.ndarray | None, out: np.ndarray | None = None
) -> np.ndarray:
    """FP8 codes of raw ``dtype`` storage; 16-bit inputs go through ``lut`` (two threads), F32 directly.

    ``out``: optional 1-D uint8 buffer whose head receives the codes.
    """
    return start_quantize(raw, dtype, scale, lut, out)()[0]


Quantized = Callable[[], tuple[np.ndarray, bool, RowSums | None]]
"""Waits for a started quantization; gives the codes (shaped as the source), whether all are finite,
and the round-trip sums over the measured rows (None when none were asked for)."""


def start_quantize(
    raw: np.ndarray, dtype: str, scale: float, lut: np.ndarray | None, out: np.ndarray | None = None,
    measure: Measure | None = None,
) -> Quantized:  # fmt: skip
    """Start ``quantize_raw`` of a (rows x cols) block on the lookup threads, measuring the rows that
    ``measure`` names; the returned call waits for the results.

    The caller may work meanwhile (write the previous block), but must leave ``raw`` and ``out`` alone
    until it has called the result.
    """
    if lut is None:
        codes = quantize_f32(to_float32(raw, dtype), scale)
        sums = None
        if measure is not None:
            rows = slice(measure.first, None, measure.stride)
            sums = sums_f32(to_float32(raw[rows], dtype), measure.deq[codes[rows]])
        finite = codes_finite(codes)
        return lambda: (codes, finite, sums)
    block = raw.reshape(raw.shape[0], -1) if raw.ndim else raw.reshape(1, 1)
    dst = (out[: block.size] if out is not None else np.empty(block.size, dtype=np.uint8)).reshape(
        block.shape
    )
    step = max(1, _PIECE // max(1, block.shape[1]))
    pieces = [
        POOL.submit(quantize_rows, lut, block[r : r + step], dst[r : r + step], measure and measure.at(r))
        for r in range(0, block.shape[0], step)
    ]

    def wait() -> tuple[np.ndarray, bool, RowSums | None]:
        done = [piece.result() for piece in pieces]
        sums = merge([s for _, s in done if s is not None]) if measure is not None else None
        return dst.reshape(raw.shape), not any(nan for nan, _ in done), sums

    return wait


def max_abs(raw: np.ndarray, dtype: str) -> float:
    """Largest magnitude in raw ``dtype`` storage (NaN if any element is not finite)."""
    if dtype in ("BF16", "F16"):
        top = max_magnitude16(raw)
        value = float(np.array([top], dtype=np.uint16).view(FLOAT_DTYPES[dtype])[0])
        return value if np.isfinite(value) else float("nan")
    values = to_float32(raw, dtype)
    return float(np.abs(values).max()) if np.isfinite(values).all() else float("nan")


def restore_bf16(codes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """BF16 storage (uint16) of ``float32(fp8 codes) * float32(scale)``; ``scale`` is per row or tensor."""
    product = codes.view(_FP8).astype(np.float32) * scale.astype(np.float32)
    return product.astype(_BF16).view(np.uint16)
