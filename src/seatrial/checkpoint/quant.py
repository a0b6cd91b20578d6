"""Quantization formats: what a checkpoint declares and what each stored tensor is.

A *module* is a tensor name without its last component (``...q_proj``); its *leaf* is that
last component (``weight``, ``weight_packed``, ``weight_scale``...). Auxiliary leaves
(scales, zero points, global scales, shape records) hold no logical parameters.
Logical parameters: packed FP4 in U8 counts 2 per byte; integers packed in I32 count
32 / bits per element; everything else counts one per element.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from seatrial.checkpoint.dtypes import FLOAT8_DTYPES
from seatrial.checkpoint.header import TensorEntry

AUX_LEAVES = frozenset(
    {
        "weight_scale",
        "weight_scale_2",
        "weight_scale_inv",
        "weight_global_scale",
        "input_scale",
        "input_global_scale",
        "weight_zero_point",
        "weight_g_idx",
        "weight_shape",
        "k_scale",
        "v_scale",
        "q_scale",
        "prob_scale",
        "qzeros",
        "scales",
        "g_idx",
    }
)
PACKED_LEAVES = frozenset({"weight_packed", "qweight"})


class Declared(NamedTuple):
    """The quantization a checkpoint says it has: ``label`` is its headline format."""

    source: str
    method: str
    label: str
    formats: tuple[str, ...]
    ignore: tuple[str, ...]
    int_bits: int


def _group_format(weights: dict[str, Any]) -> str:
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    if kind == "float" and bits == 4:
        return "MXFP4" if weights.get("group_size") == 32 else "NVFP4"
    if kind == "float" and bits == 8:
        return "FP8"
    return f"INT{bits}" if isinstance(bits, int) else "unknown"


def _compressed_tensors(qc: dict[str, Any]) -> tuple[list[str], int]:
    formats, int_bits = [], 4
    for group in _object(qc.get("config_groups")).values():
        weights = _object(_object(group).get("weights"))
        formats.append(_group_format(weights))
        if weights.get("type", "int") == "int" and isinstance(weights.get("num_bits"), int):
            int_bits = weights["num_bits"]
    return formats, int_bits


def declared_quantization(config: dict[str, Any], hf_quant: dict[str, Any], name: str) -> Declared:
    """Read ``quantization_config`` / ``hf_quant_config.json``; fall back to the directory name."""
    qc = _object(config.get("quantization_config"))
    q = _object(hf_quant.get("quantization"))
    if q:
        algo = str(q.get("quant_algo") or "unknown").upper()
        return Declared(
            "hf_quant_config.json", "modelopt", algo, (algo,), _names(q.get("exclude_modules")), 4
        )
    method = str(qc.get("quant_method") or "")
    if method == "compressed-tensors":
        formats, bits = _compressed_tensors(qc)
        headline = min(formats, key=_format_bits) if formats else "unknown"
        return Declared(
            "config.json", method, headline, tuple(sorted(set(formats))), _names(qc.get("ignore")), bits
        )
    if method == "modelopt":
        algo = str(qc.get("quant_algo") or "unknown").upper()
        return Declared("config.json", method, algo, (algo,), _names(qc.get("exclude_modules")), 4)
    if method == "fp8":
        return Declared("config.json", method, "FP8", ("FP8",), _names(qc.get("modules_to_not_convert")), 4)
    if method in ("gptq", "awq"):
        bits = next(
            (b for b in (qc.get("bits"), qc.get("w_bit")) if isinstance(b, int) and b in (2, 3, 4, 8)), 4
        )
        return Declared("config.json", method, f"INT{bits}", (f"INT{bits}",), (), bits)
    if method == "mxfp4":
        return Declared(
            "config.json", method, "MXFP4", ("MXFP4",), _names(qc.get("modules_to_not_convert")), 4
        )
    upper = name.upper()
    for label in ("NVFP4", "MXFP4", "FP8", "AWQ", "GPTQ", "INT4", "INT8"):
        if label in upper:
            return Declared("name", "", label, (label,), (), 4)
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "unknown").upper()
    return Declared("none", "", dtype.replace("BFLOAT16", "BF16").replace("FLOAT16", "F16"), (), (), 4)


def _object(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else (a malformed config declares nothing)."""
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> tuple[str, ...]:
    """The string entries of an ignore/exclude list."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _format_bits(label: str) -> int:
    if label.startswith("INT") and label[3:].isdigit():
        return int(label[3:])
    return {"NVFP4": 4, "MXFP4": 4, "FP8": 8}.get(label, 16)


def split_name(name: str) -> tuple[str, str]:
    module, _, leaf = name.rpartition(".")
    return module, leaf


def tensor_format(leaf: str, entry: TensorEntry, siblings: dict[str, TensorEntry], int_bits: int) -> str:
    """Storage format of a main tensor, from its dtype and its module's scale tensors."""
    scale = siblings.get("weight_scale")
    if leaf in PACKED_LEAVES or (entry.dtype == "U8" and scale is not None):
        if entry.dtype in ("I32", "U32"):
            return f"INT{int_bits}"
        if scale is not None and scale.dtype in ("F8_E8M0", "U8"):
            return "MXFP4"
        return "NVFP4" if scale is not None and scale.dtype == "F8_E4M3" else "FP4"
    if entry.dtype in FLOAT8_DTYPES:
        return "FP8/" + _fp8_scheme(entry, scale, siblings.get("weight_scale_inv"))
    return entry.dtype


def _fp8_scheme(entry: TensorEntry, scale: TensorEntry | None, scale_inv: TensorEntry | None) -> str:
    s = scale_inv or scale
    if s is None:
        return "unscaled"
    if s.numel <= 1:
        return "tensor"
    if len(s.shape) == 2 and s.shape[1] == 1 and len(entry.shape) == 2 and s.shape[0] == entry.shape[0]:
        return "channel"
    return "block"


def params_per_element(leaf: str, dtype: str, fmt: str, int_bits: int) -> int:
    """Logical parameters per stored element: 0 for auxiliary tensors, >1 for packed ones."""
    if leaf in AUX_LEAVES:
        return 0
    if fmt in ("NVFP4", "MXFP4", "FP4") and dtype == "U8":
        return 2
    if fmt.startswith("INT") and dtype in ("I32", "U32"):
        return 32 // int_bits
    return 1


def precision(fmt: str) -> str:
    """The coarse precision of a format: ``FP8/channel`` -> ``FP8``."""
    return fmt.split("/", 1)[0]
