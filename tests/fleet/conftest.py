"""Fleet fixtures: a throwaway sshd (session-wide) and a small multi-shard checkpoint of real bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tests.fleet.sshd import Sshd, start_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def write_checkpoint(root: Path, shards: int = 3, rows: int = 2048, seed: int = 0) -> Path:
    """A checkpoint as real tools lay it out: shards of random BF16-sized data, index, config, tokenizer."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    weight_map, total = {}, 0
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {f"model.layers.{i}.mlp.weight": rng.standard_normal((rows, 512)).astype(np.float16),
                   f"model.layers.{i}.norm.weight": np.ones(512, np.float16)}  # fmt: skip
        save_file(tensors, str(root / name), metadata={"format": "pt"})
        weight_map |= {t: name for t in tensors}
        total += sum(t.nbytes for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    (root / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 512}))
    (root / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}, "added_tokens": []}))
    return root


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return write_checkpoint(tmp_path / "src")
