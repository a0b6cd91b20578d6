"""The matrix products each precision path runs, and the higher-precision reference they are checked against.

Each variant builds quantized operands, a ``step`` that runs one product through the library call
under test, and ``reference``: the FP32 product of the *dequantized* inputs (TF32 off), so the only
difference a correct kernel may show is accumulation order and the BF16 rounding of its output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

FP8_MAX = 448.0
#: The 16 values of FP4 E2M1, indexed by their 4-bit code (bit 3 is the sign).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
NVFP4_BLOCK = 16

#: The variants (scaling recipes) each precision trial runs.
VARIANTS: dict[str, tuple[str, ...]] = {
    "precision.bf16": ("bf16",),
    "precision.fp8": ("fp8_tensorwise", "fp8_rowwise"),
    "precision.fp4": ("nvfp4",),
}


@dataclass
class Operands:
    """One product ready to run: ``step()`` returns the BF16 output, ``reference`` is FP32."""

    variant: str
    step: Callable[[], torch.Tensor]
    reference: torch.Tensor
    flops: int


def fp32_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b in true FP32 (TF32 off for this call)."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.mm(a.float(), b.float())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def build(variant: str, size: int, device: torch.device, seed: int = 0) -> Operands:
    """Operands of an (size x size) @ (size x size) product for ``variant``."""
    gen = torch.Generator(device=device).manual_seed(seed)
    flops = 2 * size**3
    if variant == "bf16":
        a = torch.randn(size, size, generator=gen, device=device).to(torch.bfloat16)
        b = torch.randn(size, size, generator=gen, device=device).to(torch.bfloat16)
        return Operands(variant, lambda: torch.mm(a, b), fp32_mm(a, b), flops)
    if variant in ("fp8_tensorwise", "fp8_rowwise"):
        return _fp8(variant, size, device, gen, flops)
    if variant == "nvfp4":
        return _nvfp4(size, device, gen, flops)
    raise ValueError(f"unknown precision variant {variant!r}")


def quantize_fp8(x: torch.Tensor, rowwise: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """E4M3 codes and FP32 scale(s) with x ~= codes * scale; scale = amax / 448 per tensor or per row."""
    amax = x.abs().amax(dim=1, keepdim=True) if rowwise else x.abs().amax()
    scale = (amax.float() / FP8_MAX).clamp(min=1e-12)
    codes = (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return codes, scale


def _fp8(variant: str, size: int, device: torch.device, gen: torch.Generator, flops: int) -> Operands:
    rowwise = variant == "fp8_rowwise"
    a_q, sa = quantize_fp8(torch.randn(size, size, generator=gen, device=device), rowwise)
    b_q, sb = quantize_fp8(
        torch.randn(size, size, generator=gen, device=device), rowwise
    )  # b stored as (n, k)
    reference = fp32_mm(a_q.float() * sa, (b_q.float() * sb).t())
    scale_b = sb.reshape(1, -1).contiguous() if rowwise else sb
    b_t = b_q.t()  # (k, n) column-major, as cuBLAS wants the second operand

    def step() -> torch.Tensor:
        return torch._scaled_mm(a_q, b_t, scale_a=sa, scale_b=scale_b, out_dtype=torch.bfloat16)

    return Operands(variant, step, reference, flops)


def to_blocked(scales: torch.Tensor) -> torch.Tensor:
    """cuBLAS' block-scaling-factor layout: 128x4 tiles, each rearranged to 32x16, flattened."""
    rows, cols = scales.shape
    r_blocks, c_blocks = -(-rows // 128), -(-cols // 4)
    padded = torch.zeros(r_blocks * 128, c_blocks * 4, dtype=scales.dtype, device=scales.device)
    padded[:rows, :cols] = scales
    blocks = padded.view(r_blocks, 128, c_blocks, 4).permute(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()


def _nvfp4_operand(size: int, device: torch.device, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Random E2M1 codes packed two per byte, power-of-two E4M3 block scales, and the FP32
    dequantized matrix."""
    codes = torch.randint(0, 16, (size, size), generator=gen, device=device, dtype=torch.uint8)
    packed = (codes[:, 1::2] << 4 | codes[:, ::2]).view(torch.float4_e2m1fn_x2)
    exps = torch.randint(-2, 2, (size, size // NVFP4_BLOCK), generator=gen, device=device)
    scales = torch.pow(2.0, exps.float())
    values = torch.tensor(E2M1_VALUES, device=device)[codes.long()]
    dequant = values * scales.repeat_interleave(NVFP4_BLOCK, dim=1)
    return packed, to_blocked(scales.to(torch.float8_e4m3fn)), dequant


def _nvfp4(size: int, device: torch.device, gen: torch.Generator, flops: int) -> Operands:
    a4, sa, a_ref = _nvfp4_operand(size, device, gen)
    b4, sb, b_ref = _nvfp4_operand(size, device, gen)  # b stored as (n, k/2)
    reference = fp32_mm(a_ref, b_ref.t())
    b_t = b4.t()

    def step() -> torch.Tensor:
        return torch._scaled_mm(a4, b_t, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    return Operands("nvfp4", step, reference, flops)


def relative_error(out: torch.Tensor, reference: torch.Tensor) -> float:
    """||out - reference||_F / ||reference||_F, computed in FP32; inf when out has NaN or inf."""
    out32 = out.float()
    if not bool(torch.isfinite(out32).all()):
        return float("inf")
    return float(torch.linalg.vector_norm(out32 - reference) / torch.linalg.vector_norm(reference))
