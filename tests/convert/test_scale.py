"""The scale rule and the FP8 / BF16 arithmetic, checked against torch as an independent reference."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from seatrial.checkpoint.convert.scale import (
    ceil_to_bf16,
    fp8_lut,
    fp8_scale,
    max_abs,
    quantize_raw,
    restore_bf16,
)

SEED_GLOBAL_MAX = 0.08935546875
SEED_SCALE = 0.0002002716064453125


def _all_positive_bf16() -> torch.Tensor:
    """Every finite positive BF16 value, ascending (independent of the code under test)."""
    bits = torch.arange(1, 0x7F80, dtype=torch.int32).to(torch.int16)
    return bits.view(torch.bfloat16).double()


def test_scale_rule_reproduces_seed_000() -> None:
    assert fp8_scale(SEED_GLOBAL_MAX) == SEED_SCALE


def test_round_to_nearest_would_overflow_on_the_seed_figure() -> None:
    exact = SEED_GLOBAL_MAX / 448
    nearest = float(torch.tensor(exact, dtype=torch.float64).to(torch.bfloat16).double())
    assert nearest < exact
    assert SEED_GLOBAL_MAX / nearest > 448
    assert SEED_GLOBAL_MAX / fp8_scale(SEED_GLOBAL_MAX) <= 448


@pytest.mark.parametrize("value", [SEED_GLOBAL_MAX / 448, 1e-30, 3e-5, 0.0625, 1.0, 1.0000001, 123.4, 3e38])
def test_ceil_to_bf16_is_smallest_bf16_not_below(value: float) -> None:
    candidates = _all_positive_bf16()
    expected = float(candidates[candidates >= value].min())
    assert ceil_to_bf16(value) == expected


def test_ceil_to_bf16_rejects_nonpositive() -> None:
    with pytest.raises(ValueError):
        ceil_to_bf16(0.0)


def test_fp8_lut_matches_torch_for_every_bf16_pattern() -> None:
    scale = SEED_SCALE
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = np.isfinite(bits.view(ml_dtypes.bfloat16).astype(np.float32))
    w = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float()
    reference = (w / scale).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    ours = fp8_lut("BF16", scale)
    assert np.array_equal(ours[finite], reference[finite])


def test_quantize_raw_f16_and_f32_paths_match_torch() -> None:
    rng = np.random.default_rng(3)
    values = (rng.standard_normal((40, 24)) * 0.05).astype(np.float32)
    scale = fp8_scale(float(np.abs(values).max()))
    reference = (torch.from_numpy(values) / scale).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8)
    got_f32 = quantize_raw(values.view(np.uint32), "F32", scale, None)
    assert np.array_equal(got_f32, reference.numpy())
    half = values.astype(np.float16)
    ref16 = (torch.from_numpy(half).float() / scale).clamp(-448, 448).to(torch.float8_e4m3fn)
    got16 = quantize_raw(half.view(np.uint16), "F16", scale, fp8_lut("F16", scale))
    assert np.array_equal(got16, ref16.view(torch.uint8).numpy())


def test_no_code_saturates_under_the_ceil_scale() -> None:
    rng = np.random.default_rng(4)
    values = (rng.standard_normal(10_000) * 0.02).astype(ml_dtypes.bfloat16)
    raw = values.view(np.uint16)
    scale = fp8_scale(max_abs(raw, "BF16"))
    codes = quantize_raw(raw, "BF16", scale, fp8_lut("BF16", scale))
    decoded = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert np.abs(decoded).max() <= 448
    assert max_abs(raw, "BF16") == float(np.abs(values.astype(np.float32)).max())


def test_max_abs_flags_non_finite() -> None:
    raw = np.array([1.0, -np.inf], dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert math.isnan(max_abs(raw, "BF16"))


def test_restore_bf16_matches_torch_row_and_tensor_scale() -> None:
    gen = torch.Generator().manual_seed(5)
    fp8 = (torch.randn(16, 8, generator=gen) * 100).to(torch.float8_e4m3fn)
    row_scale = (torch.rand(16, 1, generator=gen) * 0.01).to(torch.bfloat16)
    codes = fp8.view(torch.uint8).numpy()
    ref_row = (fp8.float() * row_scale.float()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    ours_row = restore_bf16(codes, row_scale.float().numpy())
    assert np.array_equal(ours_row, ref_row)
    ref_tensor = (fp8.float() * 0.0078125).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(restore_bf16(codes, np.array([[0.0078125]], dtype=np.float32)), ref_tensor)


def test_narrowing_to_fp8_and_bf16_matches_torch_beyond_the_bf16_patterns() -> None:
    """float32 inputs that are not BF16 values: halfway points (ties to even), subnormals, signs, NaN."""
    from seatrial.checkpoint.convert.scale import FP8_VALUES, bf16_bits, fp8_codes

    rng = np.random.default_rng(3)
    finite = FP8_VALUES[np.isfinite(FP8_VALUES)]
    grid = np.sort(np.unique(finite))
    mids = ((grid[1:] + grid[:-1]) / 2).astype(np.float32)  # exact ties between neighbouring codes
    x = np.concatenate([mids, -mids, rng.standard_normal(50_000).astype(np.float32) * 30,
                        rng.standard_normal(5_000).astype(np.float32) * 1e-3, np.float32([0.0, -0.0, np.nan])])  # fmt: skip
    x = np.clip(x, -448, 448)
    t = torch.from_numpy(x)
    assert np.array_equal(fp8_codes(x), t.to(torch.float8_e4m3fn).view(torch.uint8).numpy())
    wide = np.concatenate([x, rng.standard_normal(50_000).astype(np.float32) * 1e30, np.float32([np.inf, -np.inf])])
    ref = torch.from_numpy(wide).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    ours = bf16_bits(wide)
    nan = np.isnan(wide)
    assert np.array_equal(ours[~nan], ref[~nan]) and np.isnan(to_f32(ours[nan])).all()


def to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def test_convert_loads_no_float8_library() -> None:
    """The scale rule and FP8 decoding need no ml_dtypes (1 s of import): convert starts without it."""
    import subprocess
    import sys

    code = "import sys, seatrial.checkpoint.convert, seatrial.cli.convert; print('ml_dtypes' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
