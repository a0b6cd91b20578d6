"""The FP8 scale rule, FP8 E4M3FN quantization, and the FP8-with-scale to BF16 restore.

Definitions (seed 000, step 4 of the conversion):
- ``scale = ceil_to_bf16(global_max / 448)``: the smallest BF16 value >= the exact quotient.
  Round-to-nearest can land below the quotient and then ``global_max / scale`` exceeds 448.
- ``q = fp8_e4m3fn(clamp(float32(w) / float32(scale), -448, 448))`` (round to nearest even).
- ``dequant = float32(q) * float32(scale)``.
- lm_head restore: ``bf16(float32(q) * float32(row_scale))``.

BF16 and FP8 E4M3FN are done here in plain numpy: BF16 is the upper half of a float32 (round to nearest
even when narrowing), and the 256 FP8 codes are a table (:data:`FP8_VALUES`) that decodes by lookup and
encodes by a sorted search with ties to the even code. tests/convert check both against torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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


def _fp8_values() -> np.ndarray:
    """float32 value of each E4M3FN code: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
    subnormal; 0x7F and 0xFF are NaN (there is no infinity)."""
    code = np.arange(256)
    exp, mant = (code >> 3) & 0xF, (code & 7).astype(np.float64)
    mag = np.where(exp == 0, mant / 8 * 2.0**-6, (1 + mant / 8) * 2.0 ** (exp - 7.0))
    mag[(exp == 15) & (mant == 7)] = np.nan
    return (np.where(code & 0x80, -mag, mag)).astype(np.float32)


FP8_VALUES = _fp8_values()
_FP8_POSITIVE = FP8_VALUES[:127]  # codes 0..126: 0 up to 448, ascending
#: The converter's worker threads (lookups, scans): the compiled loops and numpy release the GIL.
POOL = ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2)), thread_name_prefix="seatrial-fp8")
_PIECE = 1 << 20  # elements per lookup task, in whole rows (numpy path: an 8 MiB index buffer per thread)


def ceil_to_bf16(value: float) -> float:
    """Smallest BF16 value >= ``value`` (``value`` finite and > 0)."""
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"scale quotient must be finite and positive, got {value!r}")
    bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0]) >> 16
    while _bf16_value(bits) < value:
        bits += 1
    while bits > 0 and _bf16_value(bits - 1) >= value:
        bits -= 1
    return _bf16_value(bits)


def _bf16_value(bits: int) -> float:
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """BF16 storage (uint16) of float32 ``values``, rounded to nearest even; a NaN stays a (quiet) NaN."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    out = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        out[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return out


def fp8_codes(values: np.ndarray) -> np.ndarray:
    """E4M3FN codes (uint8) of float32 ``values`` within +-448, rounded to nearest with ties to the even
    code (the even mantissa); NaN gives NaN."""
    x = np.asarray(values, dtype=np.float32)
    mag = np.abs(x)
    hi = np.minimum(np.searchsorted(_FP8_POSITIVE, mag), 126)
    lo = np.maximum(hi - 1, 0)
    below, above = mag - _FP8_POSITIVE[lo], _FP8_POSITIVE[hi] - mag
    code = np.where((above < below) | ((above == below) & (hi % 2 == 0)), hi, lo).astype(np.uint8)
    code[np.isnan(mag)] = 0x7F
    return code | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))


def fp8_scale(global_max: float) -> float:
    """The stored BF16 scale for a table whose largest magnitude is ``global_max``."""
    return ceil_to_bf16(global_max / FP8_E4M3_MAX)


def to_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Interpret raw unsigned-integer storage of safetensors ``dtype`` as float32 values."""
    if dtype == "BF16":  # BF16 is the upper half of a float32: exact by a shift
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "F8_E4M3":
        return FP8_VALUES[raw.view(np.uint8)]
    return raw.view({"F16": np.float16, "F32": np.float32}[dtype]).astype(np.float32)


def quantize_f32(values: np.ndarray, scale: float) -> np.ndarray:
    """FP8 E4M3FN codes (uint8) of float32 ``values`` under ``scale``: the formula, element by element."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values.astype(np.float32) / np.float32(scale)
    np.clip(scaled, -FP8_E4M3_MAX, FP8_E4M3_MAX, out=scaled)
    return fp8_codes(scaled)


def pattern_values(dtype: str) -> np.ndarray:
    """float32 value of each of the 65,536 patterns of a 16-bit ``dtype``, indexed by pattern."""
    return to_float32(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16), dtype)


def fp8_lut(dtype: str, scale: float) -> np.ndarray:
    """Lookup table code[pattern] for every 16-bit pattern of ``dtype``: ``quantize_f32`` applied once."""
    return quantize_f32(pattern_values(dtype), scale)


def dequant_lut(scale: float) -> np.ndarray:
    """float32 value of each of the 256 FP8 codes times ``scale``."""
    return FP8_VALUES * np.float32(scale)


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
        value = float(to_float32(np.array([top], dtype=np.uint16), dtype)[0])
        return value if np.isfinite(value) else float("nan")
    values = to_float32(raw, dtype)
    return float(np.abs(values).max()) if np.isfinite(values).all() else float("nan")


def restore_bf16(codes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """BF16 storage (uint16) of ``float32(fp8 codes) * float32(scale)``; ``scale`` is per row or tensor."""
    product = FP8_VALUES[codes.view(np.uint8)] * scale.astype(np.float32)
    return bf16_bits(product)
