"""A full-shape replica of seed 000's checkpoint (Qwen3.8-Flash-Next, NVFP4-labelled, BF16 PLE).

48 layers (3 linear-attention : 1 full-attention), 512 routed experts in compressed-tensors
NVFP4, FP8 attention and shared expert with BF16 row scales, 128 BF16 PLE tensors
[2,500,012 x 160] in one 95.37 GiB shard, FP8 lm_head [248,320 x 2,560] with a BF16 row
scale, a BF16 vision tower, MTP declared in config.json and not stored. The vision
tower's last tensors are sized so that total_size is the seed's 177,598,883,320 bytes.
``converted=True`` writes the layout after seed 000's conversion: PLE FP8 in 128 files
with one BF16 global scale, lm_head restored to BF16.
"""

from __future__ import annotations

from pathlib import Path

from tests.ckptgen.layouts import bf16, fp8_channel, nvfp4_compressed_tensors
from tests.ckptgen.writer import Spec, pack_shards, write_sharded

SEED_TOTAL_SIZE = 177_598_883_320
HIDDEN, VOCAB, LAYERS, EXPERTS, MOE_INTER, SHARED_INTER = 2560, 248_320, 48, 512, 640, 6144
PLE_SHARDS, PLE_ROWS, PLE_COLS = 128, 2_500_012, 160
LM = "model.language_model"
PLE = f"{LM}.ple.ple_embedding.ngram_embedding"


def layer_types() -> list[str]:
    return ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(LAYERS)]


def _attention(p: str, kind: str) -> list[Spec]:
    if kind == "full_attention":
        return [
            *fp8_channel(f"{p}.self_attn.q_proj", 16 * 256 * 2, HIDDEN),
            *fp8_channel(f"{p}.self_attn.k_proj", 2 * 256, HIDDEN),
            *fp8_channel(f"{p}.self_attn.v_proj", 2 * 256, HIDDEN),
            *fp8_channel(f"{p}.self_attn.o_proj", HIDDEN, 16 * 256),
            *bf16(f"{p}.self_attn.q_norm.weight", 256),
            *bf16(f"{p}.self_attn.k_norm.weight", 256),
        ]
    return [
        *fp8_channel(f"{p}.linear_attn.in_proj_qkvz", 2 * 2048 + 2 * 4096, HIDDEN),
        *bf16(f"{p}.linear_attn.in_proj_ba.weight", 64, HIDDEN),
        *bf16(f"{p}.linear_attn.conv1d.weight", 8192, 1, 4),
        Spec(f"{p}.linear_attn.A_log", "F32", (32,)),
        *bf16(f"{p}.linear_attn.dt_bias", 32),
        Spec(f"{p}.linear_attn.norm.weight", "F32", (128,)),
        *fp8_channel(f"{p}.linear_attn.out_proj", HIDDEN, 4096),
    ]


def _layer(i: int, kind: str) -> list[Spec]:
    p = f"{LM}.layers.{i}"
    specs = [*bf16(f"{p}.input_layernorm.weight", HIDDEN), *_attention(p, kind)]
    specs += [
        *bf16(f"{p}.post_attention_layernorm.weight", HIDDEN),
        *bf16(f"{p}.mlp.gate.weight", EXPERTS, HIDDEN),
    ]
    for e in range(EXPERTS):
        for proj, out, inp in (
            ("gate_proj", MOE_INTER, HIDDEN),
            ("up_proj", MOE_INTER, HIDDEN),
            ("down_proj", HIDDEN, MOE_INTER),
        ):
            specs += nvfp4_compressed_tensors(f"{p}.mlp.experts.{e}.{proj}", out, inp)
    for proj, out, inp in (
        ("gate_proj", SHARED_INTER, HIDDEN),
        ("up_proj", SHARED_INTER, HIDDEN),
        ("down_proj", HIDDEN, SHARED_INTER),
    ):
        specs += fp8_channel(f"{p}.mlp.shared_expert.{proj}", out, inp)
    return specs + bf16(f"{p}.mlp.shared_expert_gate.weight", 1, HIDDEN)


def _vision(budget: int) -> list[Spec]:
    """A SigLIP-sized BF16 tower (27 blocks, width 1152) whose merger closes ``budget`` exactly."""
    v, w, inter = "model.visual", 1152, 4304
    specs = [*bf16(f"{v}.patch_embed.proj.weight", w, 3, 2, 16, 16), *bf16(f"{v}.pos_embed.weight", 2304, w)]
    for b in range(27):
        q = f"{v}.blocks.{b}"
        for name, shape in (
            ("norm1", (w,)),
            ("norm2", (w,)),
            ("attn.qkv", (3 * w, w)),
            ("attn.proj", (w, w)),
            ("mlp.linear_fc1", (inter, w)),
            ("mlp.linear_fc2", (w, inter)),
        ):
            specs += bf16(f"{q}.{name}.weight", *shape) + bf16(f"{q}.{name}.bias", shape[0])
    specs += bf16(f"{v}.merger.norm.weight", w) + bf16(f"{v}.merger.linear_fc1.weight", 4 * w, 4 * w)
    rest = budget - sum(s.nbytes for s in specs)
    rows, tail = divmod(rest, 2 * 4 * w)
    assert rows > 0 and tail % 2 == 0, rest
    return (
        specs
        + bf16(f"{v}.merger.linear_fc2.weight", rows, 4 * w)
        + bf16(f"{v}.merger.linear_fc2.bias", tail // 2)
    )


def _ple(converted: bool) -> list[Spec]:
    dtype = "F8_E4M3" if converted else "BF16"
    specs = [Spec(f"{PLE}.shard_{i}.weight", dtype, (PLE_ROWS, PLE_COLS)) for i in range(PLE_SHARDS)]
    return specs + ([Spec(f"{PLE}.weight_scale", "BF16", (1,))] if converted else [])


def original_specs() -> tuple[list[Spec], list[Spec]]:
    """(non-PLE tensors in file order, PLE tensors) of the original checkpoint."""
    text = bf16(f"{LM}.embed_tokens.weight", VOCAB, HIDDEN)
    for i, kind in enumerate(layer_types()):
        text += _layer(i, kind)
    text += bf16(f"{LM}.norm.weight", HIDDEN) + fp8_channel("lm_head", VOCAB, HIDDEN)
    ple = _ple(False)
    budget = SEED_TOTAL_SIZE - sum(s.nbytes for s in text) - sum(s.nbytes for s in ple)
    return text + _vision(budget), ple


def config(converted: bool = False) -> dict[str, object]:
    targets_fp8 = [
        "re:.*self_attn.*_proj$",
        "re:.*linear_attn.in_proj_qkvz$",
        "re:.*linear_attn.out_proj$",
        "re:.*shared_expert\\.(gate|up|down)_proj$",
    ] + ([] if converted else ["lm_head"])
    ignore = ["re:.*visual.*", "re:.*mlp.gate$", "re:.*shared_expert_gate$", "re:.*in_proj_ba$"]
    ignore += [f"{PLE}.shard_{i}" for i in range(PLE_SHARDS)] + ([] if not converted else ["lm_head"])
    quant = {
        "quant_method": "compressed-tensors",
        "format": "mixed-precision",
        "ignore": ignore,
        "config_groups": {
            "group_0": {
                "targets": ["re:.*mlp.experts.*_proj$"],
                "format": "nvfp4-pack-quantized",
                "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
            },
            "group_1": {
                "targets": targets_fp8,
                "format": "float-quantized",
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            },
        },
    }
    text = {
        "model_type": "qwen3_next",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "vocab_size": VOCAB,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "layer_types": layer_types(),
        "full_attention_interval": 4,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "num_experts": EXPERTS,
        "num_experts_per_tok": 10,
        "moe_intermediate_size": MOE_INTER,
        "shared_expert_intermediate_size": SHARED_INTER,
        "intermediate_size": 4 * HIDDEN,
        "max_position_embeddings": 262_144,
        "torch_dtype": "bfloat16",
        "mtp_num_hidden_layers": 1,
        "ngram_size": 3,
        "heads_per_ngram": 8,
        "ngram_vocab_size_base": 20_000_000,
        "split_ngram_parts": PLE_SHARDS,
        "ple_embed_dim": HIDDEN,
    }
    return {
        "architectures": ["Qwen3_8FlashNextForConditionalGeneration"],
        "model_type": "qwen3_8_flash_next",
        "text_config": text,
        "quantization_config": quant,
        "torch_dtype": "bfloat16",
    }


def _target(specs: list[Spec], count: int) -> int:
    """A shard size that packs ``specs`` greedily into exactly ``count`` shards."""
    return sum(s.nbytes for s in specs) * 101 // (100 * count)


def write_seed000(root: Path, converted: bool = False) -> int:
    """Write the replica under ``root``; return the index total_size."""
    text, ple = original_specs()
    if converted:
        text = [s for s in text if not s.name.startswith("lm_head")] + bf16("lm_head.weight", VOCAB, HIDDEN)
        shards = pack_shards(text, _target(text, 16), "model", 16)
        fp8 = _ple(True)
        for i in range(PLE_SHARDS):
            scale = [fp8[-1]] if i == PLE_SHARDS - 1 else []
            shards[f"ple-{i:05d}-of-{PLE_SHARDS:05d}.safetensors"] = [fp8[i], *scale]
        return write_sharded(root, shards, config(converted=True))
    first, *rest = pack_shards(text, _target(text, 16), "model", 17).items()
    shards = {first[0]: first[1], "model-00002-of-00017.safetensors": ple}
    for n, (_, specs) in enumerate(rest, start=3):
        shards[f"model-{n:05d}-of-00017.safetensors"] = specs
    return write_sharded(root, shards, config())
