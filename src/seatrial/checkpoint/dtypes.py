"""Safetensors dtype names and their storage width in bits.

The names are the ones the safetensors format writes in a header's ``dtype`` field.
"""

from __future__ import annotations

DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}

FLOAT8_DTYPES = frozenset({"F8_E4M3", "F8_E5M2"})
"""Dtypes that store an FP8 weight directly (one element per parameter)."""


def storage_bytes(dtype: str, numel: int) -> int:
    """Bytes a tensor of ``numel`` elements of ``dtype`` occupies (sub-byte types packed)."""
    return numel * DTYPE_BITS[dtype] // 8
