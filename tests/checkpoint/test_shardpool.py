"""Shards digested in forked workers give exactly the in-process audit, errors and findings included."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest
from tests.ckptgen.layouts import bf16, nvfp4_compressed_tensors
from tests.ckptgen.writer import write_sharded

from seatrial.checkpoint import audit, scan, summarize
from seatrial.checkpoint import shardpool as shardpool_module
from seatrial.checkpoint.digest import names_hash
from seatrial.checkpoint.index import index_fingerprints
from seatrial.errors import CheckpointError

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2,
    reason="forked shard workers run on Linux with at least two CPUs",
)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Force the worker path on any checkpoint size; record whether each pool started workers."""
    seen: list[bool] = []
    real = shardpool_module.ShardPool.__enter__

    def spy(self: shardpool_module.ShardPool) -> shardpool_module.ShardPool:
        seen.append(self.parallel)
        return real(self)

    monkeypatch.setattr(shardpool_module, "PARALLEL_MIN_HEADER_BYTES", 0)
    monkeypatch.setattr(shardpool_module.ShardPool, "__enter__", spy)
    return seen


def _three_shards(root: Path) -> Path:
    shards = {
        f"model-0000{i + 1}-of-00003.safetensors": bf16(f"model.layers.{i}.self_attn.q_proj.weight", 8, 8)
        + nvfp4_compressed_tensors(f"model.layers.{i}.mlp.experts.0.up_proj", 16, 32)
        for i in range(3)
    }
    write_sharded(root, shards, {"num_hidden_layers": 3})
    return root


def test_worker_digests_equal_in_process(
    seed000: Path, started: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    parallel = summarize(scan(seed000))
    monkeypatch.setattr(shardpool_module, "PARALLEL_MIN_HEADER_BYTES", 1 << 62)
    alone = summarize(scan(seed000))
    assert started == [True, False]
    assert parallel.model_dump() == alone.model_dump()
    assert parallel.component("ple") is not None and parallel.component("ple").bytes == 102_400_491_520


def test_worker_error_names_the_bad_shard(tmp_path: Path, started: list[bool]) -> None:
    root = _three_shards(tmp_path / "ckpt")
    bad = root / "model-00002-of-00003.safetensors"
    raw = bad.read_bytes()
    bad.write_bytes(raw[:8] + b"{not json" + raw[17:])
    with pytest.raises(CheckpointError, match="header is not valid JSON") as info:
        audit(root)
    assert info.value.path == str(bad.resolve())
    assert started == [True]


def test_index_mismatch_found_from_worker_digests(tmp_path: Path, started: list[bool]) -> None:
    root = _three_shards(tmp_path / "ckpt")
    index_path = root / "model.safetensors.index.json"
    index = orjson.loads(index_path.read_bytes())
    index["weight_map"]["model.layers.1.self_attn.q_proj.weight"] = "model-00003-of-00003.safetensors"
    index_path.write_bytes(orjson.dumps(index))
    codes = {f.code: f.message for f in audit(root).findings}
    assert "model.layers.1.self_attn.q_proj.weight" in codes["index_missing_tensors"]
    assert started == [True]


def test_index_fingerprints_match_shard_names() -> None:
    weight_map = {"a.weight": "x.safetensors", "b.weight": "y.safetensors", "c.weight": "x.safetensors"}
    prints = index_fingerprints(weight_map)
    assert prints == {
        "x.safetensors": (2, names_hash(["c.weight", "a.weight"])),
        "y.safetensors": (1, names_hash(["b.weight"])),
    }
    assert prints["x.safetensors"] != (2, names_hash(["a.weight", "b.weight"]))
