"""Tensor layouts real quantization tools write, per linear layer ``[out, in]``."""

from __future__ import annotations

from tests.ckptgen.writer import Spec


def bf16(name: str, *shape: int) -> list[Spec]:
    return [Spec(name, "BF16", tuple(shape))]


def nvfp4_compressed_tensors(prefix: str, out: int, inp: int) -> list[Spec]:
    """compressed-tensors ``nvfp4-pack-quantized``: FP4 packed 2 per byte, FP8 scale per 16."""
    return [
        Spec(f"{prefix}.weight_packed", "U8", (out, inp // 2)),
        Spec(f"{prefix}.weight_scale", "F8_E4M3", (out, inp // 16)),
        Spec(f"{prefix}.weight_global_scale", "F32", (1,)),
        Spec(f"{prefix}.input_global_scale", "F32", (1,)),
    ]


def nvfp4_modelopt(prefix: str, out: int, inp: int) -> list[Spec]:
    """NVIDIA ModelOpt NVFP4: U8 ``weight``, F8 ``weight_scale``, F32 ``weight_scale_2``."""
    return [
        Spec(f"{prefix}.weight", "U8", (out, inp // 2)),
        Spec(f"{prefix}.weight_scale", "F8_E4M3", (out, inp // 16)),
        Spec(f"{prefix}.weight_scale_2", "F32", ()),
        Spec(f"{prefix}.input_scale", "F32", ()),
    ]


def fp8_channel(prefix: str, out: int, inp: int, scale_dtype: str = "BF16") -> list[Spec]:
    """compressed-tensors FP8 with one scale per output row."""
    return [
        Spec(f"{prefix}.weight", "F8_E4M3", (out, inp)),
        Spec(f"{prefix}.weight_scale", scale_dtype, (out, 1)),
    ]


def fp8_tensor(prefix: str, out: int, inp: int) -> list[Spec]:
    return [
        Spec(f"{prefix}.weight", "F8_E4M3", (out, inp)),
        Spec(f"{prefix}.weight_scale", "F32", (1,)),
        Spec(f"{prefix}.input_scale", "F32", (1,)),
    ]


def fp8_block_deepseek(prefix: str, out: int, inp: int) -> list[Spec]:
    """DeepSeek FP8: 128x128 blocks with an inverse scale ``weight_scale_inv``."""
    return [
        Spec(f"{prefix}.weight", "F8_E4M3", (out, inp)),
        Spec(f"{prefix}.weight_scale_inv", "F32", (-(-out // 128), -(-inp // 128))),
    ]


def int4_compressed_tensors(prefix: str, out: int, inp: int, group: int = 128) -> list[Spec]:
    """compressed-tensors ``pack-quantized`` W4A16: eight 4-bit values per I32."""
    return [
        Spec(f"{prefix}.weight_packed", "I32", (out, inp // 8)),
        Spec(f"{prefix}.weight_scale", "BF16", (out, inp // group)),
        Spec(f"{prefix}.weight_shape", "I64", (2,)),
    ]
