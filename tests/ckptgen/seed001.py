"""Seed 001's 2.4T-parameter MoE (Qwen3.8-2.4T-A95B) as config.json only, FP8 or NVFP4.

256 routed experts of [3 x 8192 x 5920] in 64 layers plus GQA attention and BF16 embeddings:
about 2.396e12 parameters, 95.9e9 active with 9 experts per token.
"""

from __future__ import annotations

from pathlib import Path

import orjson

_GROUPS = {
    "FP8": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "NVFP4": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
}


def config_2p4t(fmt: str) -> dict[str, object]:
    quant = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized" if fmt == "FP8" else "nvfp4-pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": _GROUPS[fmt]}},
    }
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "torch_dtype": "bfloat16",
        "hidden_size": 8192,
        "num_hidden_layers": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151_936,
        "max_position_embeddings": 32_768,
        "num_experts": 256,
        "num_experts_per_tok": 9,
        "moe_intermediate_size": 5920,
        "intermediate_size": 24_576,
        "quantization_config": quant,
    }


def write_config_2p4t(path: Path, fmt: str) -> Path:
    path.write_bytes(orjson.dumps(config_2p4t(fmt), option=orjson.OPT_INDENT_2))
    return path
