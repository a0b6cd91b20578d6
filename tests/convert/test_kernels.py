"""The compiled loops (_fp8.c) against the numpy ones they replace, on awkward shapes and values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from replica import compiled_or_skip

from seatrial.checkpoint.convert import kernels
from seatrial.checkpoint.convert.kernels import Measure, RowSums, max_magnitude16, quantize_rows
from seatrial.checkpoint.convert.scale import dequant_lut, fp8_lut, fp8_scale, to_float32

SCALE = fp8_scale(0.09)


def _patterns(rows: int, cols: int, dtype: str, seed: int) -> np.ndarray:
    """16-bit patterns of normal weights, with zero rows, zeros, tiny values and both signs."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, cols)).astype(np.float32) * 0.02
    values[::5] = 0.0  # all-zero rows are skipped by the cosine
    values[1::3, ::4] = 1e-9  # flushed to zero in FP8
    values[2::7, 1::2] *= -1
    wide = values.astype(ml_dtypes.bfloat16 if dtype == "BF16" else np.float16)
    return wide.view(np.uint16)


def _both(monkeypatch: pytest.MonkeyPatch, fn, *args):  # type: ignore[no-untyped-def]
    compiled = fn(*args)
    with monkeypatch.context() as m:
        m.setattr(kernels, "_C", None)
        plain = fn(*args)
    return compiled, plain


def _run(
    lut: np.ndarray, src: np.ndarray, measure: Measure | None
) -> tuple[np.ndarray, bool, RowSums | None]:
    dst = np.full(src.shape, 0x55, dtype=np.uint8)
    nan, sums = quantize_rows(lut, src, dst, measure)
    return dst, nan, sums


@pytest.mark.parametrize("dtype", ["BF16", "F16"])
@pytest.mark.parametrize(
    ("rows", "cols", "first", "stride"), [(37, 160, 0, 16), (50, 7, 3, 4), (9, 1, 0, 1), (5, 13, 6, 16)]
)
def test_quantize_rows_compiled_equals_numpy(
    monkeypatch: pytest.MonkeyPatch, dtype: str, rows: int, cols: int, first: int, stride: int
) -> None:
    compiled_or_skip()
    src = _patterns(rows, cols, dtype, seed=rows * cols)
    lut = fp8_lut(dtype, SCALE)
    values = to_float32(np.arange(1 << 16, dtype=np.uint16), dtype)
    measure = Measure(values, dequant_lut(SCALE), first, stride)
    (codes_c, nan_c, sums_c), (codes_n, nan_n, sums_n) = _both(monkeypatch, _run, lut, src, measure)
    np.testing.assert_array_equal(codes_c, codes_n)
    np.testing.assert_array_equal(codes_c, lut[src])
    assert nan_c is nan_n is False
    assert sums_c is not None and sums_n is not None
    assert sums_c[:4] == sums_n[:4]  # rows_live, rows_zero, elements, flushed
    assert sums_c.rows_live + sums_c.rows_zero == len(range(first, rows, stride))
    for got, want in zip(sums_c[4:], sums_n[4:], strict=True):
        assert got == pytest.approx(want, rel=1e-6)


def test_quantize_rows_reports_nan_codes_and_measures_nothing_without_measure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled_or_skip()
    src = _patterns(11, 19, "BF16", seed=1)
    lut = fp8_lut("BF16", SCALE)
    (_, clean_c, none_c), (_, clean_n, none_n) = _both(monkeypatch, _run, lut, src, None)
    assert clean_c is clean_n is False and none_c is none_n is None
    for at in [(0, 0), (10, 18), (4, 8)]:  # first, last (in the tail loop) and inside an 8-wide group
        bad = src.copy()
        bad[at] = 0x7FC0  # BF16 NaN
        (_, nan_c, _), (_, nan_n, _) = _both(monkeypatch, _run, lut, bad, None)
        assert nan_c is nan_n is True


def test_max_magnitude16_compiled_equals_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled_or_skip()
    rng = np.random.default_rng(7)
    for size in [1, 7, 1000, 4097]:
        raw = rng.integers(0, 1 << 16, size=size, dtype=np.uint16)
        compiled, plain = _both(monkeypatch, max_magnitude16, raw)
        assert compiled == plain == int((raw & 0x7FFF).max())
    odd = np.frombuffer(b"\x00" + raw.tobytes(), dtype=np.uint8)[1:].view(np.uint16)  # unaligned view
    assert max_magnitude16(odd) == int((raw & 0x7FFF).max())


def test_compiled_loops_refuse_mismatched_buffers() -> None:
    compiled_or_skip()
    assert kernels._C is not None
    lut = fp8_lut("BF16", SCALE)
    src = np.zeros((4, 8), dtype=np.uint16)
    with pytest.raises(ValueError, match="quantize16"):
        kernels._C.quantize16(lut[:100], src, np.zeros(32, np.uint8), np.empty(0), np.empty(0), 8, 0, 0)
    with pytest.raises(ValueError, match="quantize16"):  # destination too small
        kernels._C.quantize16(lut, src, np.zeros(31, np.uint8), np.empty(0), np.empty(0), 8, 0, 0)
    with pytest.raises(ValueError, match="quantize16"):  # measuring without the value tables
        kernels._C.quantize16(lut, src, np.zeros(32, np.uint8), np.empty(0), np.empty(0), 8, 0, 2)
    with pytest.raises(ValueError, match="max_magnitude16"):
        kernels._C.max_magnitude16(b"\x00\x01\x02")
