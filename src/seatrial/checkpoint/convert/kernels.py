"""The converter's per-element loops over 16-bit sources: compiled (``_fp8.c``) when it was built, numpy
otherwise. Both give the same results (the tests run both); :func:`kernel` says which one runs.

The compiled loops make one pass where numpy makes several (a 16-bit table lookup in numpy first widens
every index to 8 bytes), and release the GIL, so the lookup threads run in parallel.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import NamedTuple

import numpy as np

try:
    from seatrial.checkpoint.convert import _fp8 as _compiled

    _C: ModuleType | None = _compiled
except ImportError:  # installed without a C compiler
    _C = None
_LOCAL = threading.local()


def kernel() -> str:
    """``"c"`` when the compiled loops are in use, else ``"numpy"``."""
    return "c" if _C is not None else "numpy"


class RowSums(NamedTuple):
    """Round-trip sums over measured rows (see fidelity.py for the definitions)."""

    rows_live: int
    rows_zero: int
    elements: int
    flushed: int
    signal_sq: float
    noise_sq: float
    cosine_sum: float
    cosine_min: float  # +inf when no row is live


class Measure(NamedTuple):
    """Which rows of a block the fidelity report measures, and the value tables it needs."""

    values: np.ndarray  # float32 value of each of the 65,536 16-bit source patterns (empty for F32)
    deq: np.ndarray  # float32 dequantized value of each of the 256 codes
    first: int
    stride: int

    def at(self, row: int) -> Measure:
        """The same rows, for a block that starts ``row`` rows further on."""
        return self._replace(first=(self.first - row) % self.stride)


_NONE = np.empty(0, dtype=np.float32)
_NO_SUMS = RowSums(0, 0, 0, 0, 0.0, 0.0, 0.0, float("inf"))


def quantize_rows(
    lut: np.ndarray, src: np.ndarray, dst: np.ndarray, measure: Measure | None
) -> tuple[bool, RowSums | None]:
    """FP8 codes ``dst = lut[src]`` of a (rows x cols) block of 16-bit patterns, and the round-trip
    sums over the measured rows. Returns (whether a code is E4M3FN NaN, the sums). Thread-safe.
    """
    if _C is not None and src.shape[1] > 0:
        m = measure or Measure(_NONE, _NONE, 0, 0)
        nan, *sums = _C.quantize16(lut, src, dst, m.values, m.deq, src.shape[1], m.first, m.stride)
        return nan, RowSums(*sums) if measure else None
    flat = src.reshape(-1)
    index = getattr(_LOCAL, "index", None)  # numpy would allocate a new index array on every call
    if index is None or index.size < flat.size:
        index = _LOCAL.index = np.empty(flat.size, dtype=np.intp)
    np.copyto(index[: flat.size], flat, casting="unsafe")
    np.take(lut, index[: flat.size], out=dst.reshape(-1), mode="wrap")
    if measure is None:
        return not codes_finite(dst), None
    rows = slice(measure.first, None, measure.stride)
    return not codes_finite(dst), sums_f32(measure.values[src[rows]], measure.deq[dst[rows]])


def merge(parts: list[RowSums]) -> RowSums:
    """The sums of several blocks as one."""
    if not parts:
        return _NO_SUMS
    *sums, minima = zip(*parts, strict=True)
    return RowSums._make([*(sum(c) for c in sums), min(minima)])


def codes_finite(codes: np.ndarray) -> bool:
    """True when no code is E4M3FN's NaN (0x7F / 0xFF)."""
    if codes.size == 0:
        return True
    return int(codes.max()) != 0xFF and int(codes.view(np.int8).max()) != 0x7F


def max_magnitude16(raw: np.ndarray) -> int:
    """The largest ``x & 0x7FFF`` over 16-bit float patterns: for BF16 and F16 the magnitude order."""
    if raw.size == 0:
        return 0
    if _C is not None:
        return int(_C.max_magnitude16(np.ascontiguousarray(raw)))
    # Among non-negative patterns (int16 >= 0) and among negative ones (uint16 >= 0x8000) the pattern
    # order is the magnitude order, so two reductions find the top magnitude without a temporary.
    return max(int(raw.view(np.int16).max()), int(raw.max()) - 0x8000, 0)


def sums_f32(src: np.ndarray, deq: np.ndarray) -> RowSums:
    """Row sums of 2-D float32 source values and their dequantized values, in numpy."""
    if src.size == 0:
        return _NO_SUMS
    dot = np.einsum("ij,ij->i", src, deq).astype(np.float64)
    src_sq = np.einsum("ij,ij->i", src, src).astype(np.float64)
    deq_sq = np.einsum("ij,ij->i", deq, deq).astype(np.float64)
    err = src - deq
    live = src_sq > 0
    denom = np.sqrt(src_sq[live] * deq_sq[live])
    cosine = np.divide(dot[live], denom, out=np.zeros_like(denom), where=denom > 0)
    rows_live = int(np.count_nonzero(live))  # count_nonzero: bool .sum() is ~10x slower here
    return RowSums(
        rows_live=rows_live,
        rows_zero=int(live.size) - rows_live,
        elements=int(src.size),
        # A zero source element always dequantizes to zero, so the flushed ones are the surplus of zeros.
        flushed=int(np.count_nonzero(deq == 0)) - int(np.count_nonzero(src == 0)),
        signal_sq=float(src_sq.sum()),
        noise_sq=float(np.einsum("ij,ij->i", err, err).sum(dtype=np.float64)),
        cosine_sum=float(cosine.sum()),
        cosine_min=float(cosine.min()) if cosine.size else float("inf"),
    )
