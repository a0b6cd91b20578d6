"""A small-shape replica of seed 000's mixed checkpoint, written the way real tools write it.

- ``model-00002-of-00003.safetensors`` holds the PLE n-gram embedding in BF16, split into 8 shard tensors
  ``model.ple.ple_embedding.ngram_embedding.shard_{0..7}.weight`` [rows x 16] (seed: 128 x [2,500,012 x 160]);
  shard 5's values are halved, so its own max is about half the global max.
- ``model-00003-of-00003.safetensors`` holds an FP8 E4M3 lm_head [64 x 32] with a BF16 row scale
  ``lm_head.weight_scale`` [64 x 1] (compressed-tensors channel strategy), next to ``model.norm.weight``.
- ``model-00001-of-00003.safetensors`` holds the rest (embed_tokens BF16, an FP8 projection with its scale).
- config.json with a compressed-tensors ``quantization_config`` (lm_head an explicit FP8 target, PLE ignored),
  model.safetensors.index.json, tokenizer.json. Files are written by ``safetensors.torch.save_file``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from tests import compiled

from seatrial.checkpoint.convert import ConvertOptions, ConvertResult, convert_checkpoint, kernels

PLE = "model.ple.ple_embedding.ngram_embedding"
PLE_SHARDS = 8
PLE_ROWS = 300
PLE_DIM = 16
VOCAB, HIDDEN = 64, 32


def ple_tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for i in range(PLE_SHARDS):
        values = torch.randn(PLE_ROWS, PLE_DIM, generator=gen) * 0.02
        values[0, 0] = 0.0  # an exact zero stays zero
        values[1, :] = 0.0  # an all-zero row: skipped by row cosine
        values[2, 0] = 1e-7  # tiny: flushed to zero in FP8
        if i == 5:
            values = values / 2
        tensors[f"{PLE}.shard_{i}.weight"] = values.to(torch.bfloat16)
    return tensors


def lm_head_tensors(seed: int = 1) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(VOCAB, HIDDEN, generator=gen) * 0.05
    row_max = weight.abs().amax(dim=1, keepdim=True)
    scale = (row_max / 448).to(torch.bfloat16)
    fp8 = (weight / scale.float()).clamp(-448, 448).to(torch.float8_e4m3fn)
    return {"lm_head.weight": fp8, "lm_head.weight_scale": scale}


def quantization_config() -> dict[str, object]:
    fp8_channel = {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}
    return {
        "quant_method": "compressed-tensors",
        "format": "mixed-precision",
        "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": fp8_channel, "format": "float-quantized"},
            "group_1": {"targets": ["lm_head"], "weights": fp8_channel, "format": "float-quantized"},
        },
        "ignore": ["re:.*ple.*", "model.embed_tokens"],
    }


def build_replica(root: Path) -> Path:
    """Write the replica checkpoint into ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(2)
    proj = torch.randn(HIDDEN, HIDDEN, generator=gen)
    files = {
        "model-00001-of-00003.safetensors": {
            "model.embed_tokens.weight": (torch.randn(VOCAB, HIDDEN, generator=gen) * 0.1).to(torch.bfloat16),
            "model.layers.0.self_attn.q_proj.weight": (proj / 2).to(torch.float8_e4m3fn),
            "model.layers.0.self_attn.q_proj.weight_scale": torch.full(
                (HIDDEN, 1), 0.5, dtype=torch.bfloat16
            ),
        },
        "model-00002-of-00003.safetensors": ple_tensors(),
        "model-00003-of-00003.safetensors": {
            **lm_head_tensors(),
            "model.norm.weight": torch.ones(HIDDEN, dtype=torch.bfloat16),
        },
    }
    weight_map, total = {}, 0
    for name, tensors in files.items():
        save_file(tensors, str(root / name), metadata={"format": "pt"})
        for tname, tensor in tensors.items():
            weight_map[tname] = name
            total += tensor.numel() * tensor.element_size()
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (root / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    config = {
        "architectures": ["ReplicaForCausalLM"],
        "hidden_size": HIDDEN,
        "vocab_size": VOCAB,
        "layer_types": ["full_attention", "sparse_attention", "sparse_attention", "full_attention"],
        "ple_config": {"ngram_size": 3, "split_ngram_parts": PLE_SHARDS, "ple_embed_dim": PLE_DIM},
        "quantization_config": quantization_config(),
    }
    (root / "config.json").write_text(json.dumps(config, indent=2))
    (root / "tokenizer.json").write_text('{"model": {"type": "BPE"}}')
    return root


def convert(src: Path, dst: Path, **kwargs: object) -> ConvertResult:
    """Run the library conversion with both seed-000 options unless told otherwise."""
    options = {"lm_head_bf16": True, "fidelity_row_stride": 1, **kwargs}
    return convert_checkpoint(ConvertOptions(src=src, dst=dst, **options))  # type: ignore[arg-type]


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative name, with its content."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def compiled_or_skip() -> None:
    compiled.compiled_or_skip(kernels.kernel() == "c", "the converter's compiled loops (_fp8.c)")
