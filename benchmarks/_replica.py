"""Build a seed-000-shaped checkpoint for the convert benchmarks: a BF16 PLE table in one file."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

PLE = "model.ple.ple_embedding.ngram_embedding"
PLE_DIM = 160  # seed 000: [2,500,012 x 160] per shard


def build(root: Path, shards: int, shard_bytes: int, seed: int = 0) -> Path:
    """``shards`` BF16 tensors of about ``shard_bytes`` each in one file, plus an FP8 lm_head file."""
    root.mkdir(parents=True)
    rows = shard_bytes // (PLE_DIM * 2)
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(rows, PLE_DIM, generator=gen) * 0.02
    table = {f"{PLE}.shard_{i}.weight": torch.roll(base, i, 0).mul(1 - i / (2 * shards)).to(torch.bfloat16)
             for i in range(shards)}  # fmt: skip
    weight = torch.randn(4096, 256, generator=gen) * 0.05
    scale = (weight.abs().amax(dim=1, keepdim=True) / 448).to(torch.bfloat16)
    head = {
        "lm_head.weight": (weight / scale.float()).clamp(-448, 448).to(torch.float8_e4m3fn),
        "lm_head.weight_scale": scale,
        "model.norm.weight": torch.ones(256, dtype=torch.bfloat16),
    }
    files = {"model-00001-of-00002.safetensors": table, "model-00002-of-00002.safetensors": head}
    weight_map, total = {}, 0
    for name, tensors in files.items():
        save_file(tensors, str(root / name))
        for tname, t in tensors.items():
            weight_map[tname] = name
            total += t.numel() * t.element_size()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    config = {
        "quantization_config": {"config_groups": {"g": {"targets": ["Linear", "lm_head"]}}, "ignore": []}
    }
    (root / "config.json").write_text(json.dumps(config))
    return root
