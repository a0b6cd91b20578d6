"""precision.*: operand construction, kernel proof on recorded H200 traces, and verdict precedence."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from seatrial.hw import precision
from seatrial.hw.matmul import E2M1_VALUES, Operands, _nvfp4_operand, quantize_fp8, relative_error, to_blocked
from seatrial.hw.precision import REL_TOLERANCE, run_precision
from seatrial.hw.precision_judge import judge_precision
from seatrial.hw.profiling import kernel_names, path_kernels
from seatrial.runs.verdicts import Verdict

CPU = torch.device("cpu")


def variant_from_trace(name: str, trace: list[dict[str, Any]], error: float = 2e-3) -> dict[str, Any]:
    window = {"start_unix_s": 10.0, "end_unix_s": 40.0}
    kernels = kernel_names(trace, "CUDA", 0)
    return {"variant": name, "kernels": kernels, "rel_error_first": error, "rel_error_last": error,
            "tflops": 600.0, "window": window}  # fmt: skip


def test_recorded_h200_traces_prove_bf16_and_fp8(h200_artifacts: dict[str, Any]) -> None:
    traces = h200_artifacts["profiler_traces"]
    bf16 = [variant_from_trace("bf16", traces["precision.bf16/gpu0"]["bf16"])]
    fp8 = [variant_from_trace(v, t) for v, t in traces["precision.fp8/gpu0"].items()]
    assert bf16[0]["kernels"] == ["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"]  # memsets left out
    r16 = judge_precision("precision.bf16", 0, bf16, 989.4)
    r8 = judge_precision("precision.fp8", 0, fp8, 1978.9)
    assert (r16.verdict, r8.verdict) == (Verdict.PASS, Verdict.PASS)
    assert all("qqtst" in k for k in r8.evidence["kernels"]) and len(r8.evidence["kernels"]) == 2
    assert r8.evidence["peak_fraction"] == round(600.0 / 1978.9, 4)


def test_fp8_that_ran_a_bf16_kernel_is_never_pass(h200_artifacts: dict[str, Any]) -> None:
    bf16_trace = h200_artifacts["profiler_traces"]["precision.bf16/gpu0"]["bf16"]
    fallback = [variant_from_trace("fp8_tensorwise", bf16_trace)]
    result = judge_precision("precision.fp8", 0, fallback, 1978.9)
    assert result.verdict is Verdict.REVIEW_REQUIRED
    assert result.reason == "no fp8 kernel in the profiler trace of fp8_tensorwise"
    assert path_kernels("fp4", result.evidence["kernels"]) == []


def test_mismatch_fails_before_anything_else(h200_artifacts: dict[str, Any]) -> None:
    trace = h200_artifacts["profiler_traces"]["precision.fp8/gpu0"]["fp8_rowwise"]
    for error in (0.5, float("inf")):
        result = judge_precision("precision.fp8", 0, [variant_from_trace("fp8_rowwise", trace, error)], None)
        assert result.verdict is Verdict.FAIL and f"> {REL_TOLERANCE}" in (result.reason or "")


def test_library_refusal_is_unsupported_with_its_message() -> None:
    refused = [
        {"variant": "nvfp4", "shape": [8, 8, 8], "unsupported": "RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED"}
    ]
    result = judge_precision("precision.fp4", 0, refused, None)
    assert result.verdict is Verdict.UNSUPPORTED
    assert result.reason == "nvfp4: RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED"
    assert result.evidence["tflops"] is None and result.evidence["kernels"] == []


def test_fp8_quantization_round_trips_within_e4m3_precision() -> None:
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(0))
    for rowwise, scale_shape in ((False, ()), (True, (64, 1))):
        codes, scale = quantize_fp8(x, rowwise)
        assert codes.dtype == torch.float8_e4m3fn and tuple(scale.shape) == scale_shape
        assert codes.float().abs().max() <= 448.0
        assert relative_error(codes.float() * scale, x) < 0.05


def test_blocked_scale_layout_follows_the_cublas_formula() -> None:
    """cuBLAS docs: 128x4 tiles in row-major tile order; inside a tile, (r, c) sits at
    (r % 32) * 16 + (r // 32) * 4 + c."""
    rows, cols = 200, 6
    scales = torch.arange(1, rows * cols + 1, dtype=torch.float32).reshape(rows, cols)
    blocked = to_blocked(scales)
    col_tiles = 2
    assert blocked.numel() == 256 * 8
    for r in range(rows):
        for c in range(cols):
            tile = (r // 128) * col_tiles + c // 4
            offset = tile * 512 + (r % 128 % 32) * 16 + (r % 128 // 32) * 4 + c % 4
            assert blocked[offset] == scales[r, c]
    assert int((blocked == 0).sum()) == blocked.numel() - rows * cols  # padding is zero


def test_nvfp4_operand_dequantizes_its_packed_codes_exactly() -> None:
    packed, blocked, dequant = _nvfp4_operand(128, CPU, torch.Generator().manual_seed(1))
    raw = packed.view(torch.uint8)
    codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).reshape(128, 128)
    values = torch.tensor(E2M1_VALUES)[codes.long()]
    ratio = dequant[values != 0] / values[values != 0]
    assert set(ratio.unique().tolist()) <= {0.25, 0.5, 1.0, 2.0}
    assert blocked.dtype == torch.float8_e4m3fn and blocked.numel() == 128 * 8


def test_relative_error_is_inf_on_nan() -> None:
    ref = torch.ones(4, 4)
    assert relative_error(torch.full((4, 4), float("nan")), ref) == float("inf")
    assert relative_error(ref * 1.01, ref) == pytest.approx(0.01, rel=1e-3)


def test_cpu_run_checks_numerics_but_cannot_prove_a_gpu_kernel() -> None:
    raw = run_precision("precision.fp8", {0: CPU, 1: CPU}, 64, 0.2)
    for gpu in (0, 1):
        variants = raw[gpu]
        assert isinstance(variants, list) and [v["variant"] for v in variants] == [
            "fp8_tensorwise",
            "fp8_rowwise",
        ]
        assert all(
            v["rel_error_first"] < REL_TOLERANCE and v["rel_error_last"] < REL_TOLERANCE for v in variants
        )
        result = judge_precision("precision.fp8", gpu, variants, None)
        assert result.verdict is Verdict.REVIEW_REQUIRED  # CPU operators are not FP8 GPU kernels
        assert "aten::_scaled_mm" in result.evidence["kernels"]
    windows = [[v["window"] for v in raw[g]] for g in (0, 1)]  # type: ignore[union-attr]
    for w0, w1 in zip(*windows, strict=True):  # each variant's loops start together (barrier) and overlap
        assert w0["start_unix_s"] < w1["end_unix_s"] and w1["start_unix_s"] < w0["end_unix_s"]


def test_cpu_nvfp4_is_unsupported_with_torch_message() -> None:
    raw = run_precision("precision.fp4", {0: CPU}, 64, 0.02)
    result = judge_precision("precision.fp4", 0, raw[0], None)  # type: ignore[arg-type]
    assert result.verdict is Verdict.UNSUPPORTED
    assert (result.reason or "").startswith("nvfp4: ValueError: Invalid scaling configuration")


def test_a_wrong_kernel_result_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong(variant: str, size: int, device: torch.device, seed: int = 0) -> Operands:
        a = torch.randn(size, size)
        return Operands(variant, lambda: torch.zeros(size, size), a @ a, 2 * size**3)

    monkeypatch.setattr(precision, "build", wrong)
    raw = run_precision("precision.bf16", {0: CPU}, 32, 0.01)
    result = judge_precision("precision.bf16", 0, raw[0], None)  # type: ignore[arg-type]
    assert result.verdict is Verdict.FAIL and "relative error 1 >" in (result.reason or "")
