"""Tiny model directories vLLM can start with ``--load-format dummy``: config.json and a tokenizer.

The tokenizer is a small BPE trained in-process with the ``tokenizers`` library (nothing downloaded).
All attention uses head_dim 64, which vLLM's CPU kernels accept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

VOCAB = 512
_COMMON = {
    "torch_dtype": "bfloat16",
    "vocab_size": VOCAB,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}

ARCHITECTURES: dict[str, dict[str, Any]] = {
    "gqa": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
    },
    "mha": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "head_dim": 64,
    },
    "sliding": {
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "sliding_window": 256,
        "sliding_window_pattern": 6,
        "query_pre_attn_scalar": 64,
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    },
    "moe": {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": 256,
        "intermediate_size": 512,
        "moe_intermediate_size": 128,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "decoder_sparse_step": 1,
        "norm_topk_prob": True,
    },
    "mla": {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "hidden_size": 256,
        "intermediate_size": 512,
        "moe_intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "kv_lora_rank": 128,
        "q_lora_rank": None,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 64,
        "v_head_dim": 64,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "topk_method": "greedy",
        "n_group": 1,
        "topk_group": 1,
        "scoring_func": "softmax",
        "routed_scaling_factor": 1.0,
        "norm_topk_prob": False,
    },
    "gdn": {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "full_attention_interval": 4,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 64,
        "linear_value_head_dim": 64,
        "linear_conv_kernel_dim": 4,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 128,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "partial_rotary_factor": 0.25,
        "norm_topk_prob": True,
    },
}


def write_tokenizer(root: Path) -> None:
    """Train a small byte-level BPE in-process and save it as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["sea trials measure speed, manoeuvres and endurance before a ship is handed over"] * 50
    tok.train_from_iterator(corpus, trainer)
    tok.save(str(root / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": 4096,
    }
    (root / "tokenizer_config.json").write_bytes(orjson.dumps(config))


def write_tiny_model(root: Path, name: str) -> Path:
    """Write ``config.json`` and a tokenizer for architecture ``name`` of ``ARCHITECTURES``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_bytes(
        orjson.dumps({**_COMMON, **ARCHITECTURES[name]}, option=orjson.OPT_INDENT_2)
    )
    write_tokenizer(root)
    return root


def write_tiny_checkpoint(root: Path, name: str = "gqa") -> Path:
    """``write_tiny_model`` plus its Llama weights as one full-size sparse safetensors file (header-only
    work: audit and plan read the shapes, nothing reads the bytes)."""
    from tests.ckptgen.writer import Spec, write_sharded

    config = {**_COMMON, **ARCHITECTURES[name]}
    h, inter, heads, kv, hd = (int(config[k]) for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                         "num_key_value_heads", "head_dim"))  # fmt: skip
    specs = [Spec("model.embed_tokens.weight", "BF16", (VOCAB, h)), Spec("lm_head.weight", "BF16", (VOCAB, h)),
             Spec("model.norm.weight", "BF16", (h,))]  # fmt: skip
    for i in range(int(config["num_hidden_layers"])):
        p = f"model.layers.{i}."
        specs += [Spec(p + "self_attn.q_proj.weight", "BF16", (heads * hd, h)),
                  Spec(p + "self_attn.k_proj.weight", "BF16", (kv * hd, h)),
                  Spec(p + "self_attn.v_proj.weight", "BF16", (kv * hd, h)),
                  Spec(p + "self_attn.o_proj.weight", "BF16", (h, heads * hd)),
                  Spec(p + "mlp.gate_proj.weight", "BF16", (inter, h)), Spec(p + "mlp.up_proj.weight", "BF16", (inter, h)),
                  Spec(p + "mlp.down_proj.weight", "BF16", (h, inter)),
                  Spec(p + "input_layernorm.weight", "BF16", (h,)), Spec(p + "post_attention_layernorm.weight", "BF16", (h,))]  # fmt: skip
    write_tiny_model(root, name)
    write_sharded(root, {"model-00001-of-00001.safetensors": specs}, config)
    return root
