"""The architecture facts memory planning needs, read from a Hugging Face config.json.

Layer kinds: ``full`` (full attention, GQA/MHA), ``sliding`` (sliding window), ``chunked``
(chunked local attention), ``mla`` (multi-head latent attention), ``linear`` (gated delta
net / linear attention state), ``none`` (no cache).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from seatrial.checkpoint.inventory import text_config
from seatrial.errors import ConfigError

DTYPE_BYTES = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 2,
    "float": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
"""Bytes per element of a model or KV-cache dtype (``float32`` checkpoints run in 16-bit under ``auto``)."""


class Arch(BaseModel):
    """Per-model facts; head counts are totals across tensor-parallel ranks."""

    model_config = ConfigDict(extra="forbid")

    model_type: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    dtype_bytes: int
    max_position_embeddings: int
    layer_kinds: list[str]
    num_heads: int
    num_kv_heads: int
    head_dim: int
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    mla_head_size: int | None = None
    linear_conv_dim: int = 0
    linear_conv_kernel: int = 0
    linear_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    intermediate_size: int = 0
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_intermediate_size: int = 0
    first_dense_layers: int = 0
    tie_word_embeddings: bool = False


MAX_LAYERS = 100_000  # the deepest models have a few hundred; lists per layer are built from this count
MAX_VALUE = 1 << 40  # any size or count of a model: beyond is a broken file


def _int(
    cfg: dict[str, Any], *keys: str, default: int | None = None, minimum: int = 0, maximum: int = MAX_VALUE
) -> int:
    """The first integer among ``keys``; outside ``minimum``..``maximum`` is a ConfigError naming the key, as
    is a key that is present but no integer (where no other key gives one)."""
    wrong: tuple[str, Any] | None = None
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            if not minimum <= value <= maximum:
                raise ConfigError(f"config.json: {key} must be {minimum} to {maximum:,}, got {value:,}")
            return value
        if value is not None and wrong is None:
            wrong = (key, value)
    if wrong is not None:
        raise ConfigError(f"config.json: {wrong[0]} must be an integer, got {wrong[1]!r}")
    if default is None:
        raise ConfigError(f"config.json: missing {' / '.join(keys)}")
    return default


_KIND = {
    "full_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
}


def _layer_kinds(cfg: dict[str, Any], n: int, mla: bool) -> list[str]:
    full = "mla" if mla else "full"
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) >= n:
        unknown = [t for t in types[:n] if not isinstance(t, str) or t not in _KIND]
        if unknown:
            raise ConfigError(f"config.json: unsupported layer_types {unknown[:3]}")
        return [full if _KIND[t] == "full" else _KIND[t] for t in types[:n]]
    if mla:
        return [full] * n
    if isinstance(cfg.get("full_attention_interval"), int):
        k = _int(cfg, "full_attention_interval", minimum=1)
        return ["full" if (i + 1) % k == 0 else "linear" for i in range(n)]
    model_type = str(cfg.get("model_type", ""))
    if model_type == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(n)]
    if model_type.startswith("gemma3"):
        k = _int(cfg, "sliding_window_pattern", default=6, minimum=1)
        return ["sliding" if (i + 1) % k else "full" for i in range(n)]
    if isinstance(cfg.get("attention_chunk_size"), int):
        rope = cfg.get("no_rope_layers")
        if not isinstance(rope, list) or len(rope) < n:
            rope = [int((i + 1) % 4 != 0) for i in range(n)]
        return ["chunked" if rope[i] else "full" for i in range(n)]
    if isinstance(cfg.get("sliding_window"), int) and cfg.get("use_sliding_window", True):
        return ["sliding"] * n
    return ["full"] * n


def arch_from_config(config: dict[str, Any], dtype: str = "auto") -> Arch:
    """Read an Arch from a (possibly multimodal) config.json document."""
    cfg = text_config(config)
    n = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", minimum=1, maximum=MAX_LAYERS)
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model", minimum=1)
    heads = _int(cfg, "num_attention_heads", "n_head", minimum=1)
    mla = isinstance(cfg.get("kv_lora_rank"), int)
    name = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16") if dtype == "auto" else dtype
    if name.replace("torch.", "") not in DTYPE_BYTES:
        raise ConfigError(f"--dtype: unsupported {name!r}")
    k_heads = _int(cfg, "linear_num_key_heads", default=0)
    k_dim = _int(cfg, "linear_key_head_dim", default=0)
    v_heads = _int(cfg, "linear_num_value_heads", default=0)
    v_dim = _int(cfg, "linear_value_head_dim", default=0)
    return Arch(
        model_type=str(cfg.get("model_type", "")),
        num_layers=n,
        hidden_size=hidden,
        vocab_size=_int(cfg, "vocab_size", minimum=1),
        dtype_bytes=DTYPE_BYTES[name.replace("torch.", "")],
        max_position_embeddings=_int(cfg, "max_position_embeddings", "n_positions", default=4096, minimum=1),
        layer_kinds=_layer_kinds(cfg, n, mla),
        num_heads=heads,
        num_kv_heads=1 if mla else _int(cfg, "num_key_value_heads", "num_kv_heads", default=heads, minimum=1),
        head_dim=_int(cfg, "head_dim", default=max(hidden // heads, 1), minimum=1),
        sliding_window=_int(cfg, "sliding_window", default=0, minimum=1) or None,
        attention_chunk_size=_int(cfg, "attention_chunk_size", default=0, minimum=1) or None,
        mla_head_size=_int(cfg, "kv_lora_rank") + _int(cfg, "qk_rope_head_dim") if mla else None,
        linear_conv_dim=k_heads * k_dim * 2 + v_heads * v_dim,
        linear_conv_kernel=_int(cfg, "linear_conv_kernel_dim", default=4),
        linear_value_heads=v_heads,
        linear_key_head_dim=k_dim,
        linear_value_head_dim=v_dim,
        intermediate_size=_int(cfg, "intermediate_size", default=4 * hidden),
        num_experts=_int(cfg, "num_experts", "n_routed_experts", "num_local_experts", default=0),
        experts_per_token=_int(cfg, "num_experts_per_tok", "num_experts_per_token", default=0),
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", default=0),
        shared_intermediate_size=_int(cfg, "shared_expert_intermediate_size", default=0)
        or _int(cfg, "n_shared_experts", default=0) * _int(cfg, "moe_intermediate_size", default=0),
        first_dense_layers=_int(cfg, "first_k_dense_replace", default=0),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
    )
