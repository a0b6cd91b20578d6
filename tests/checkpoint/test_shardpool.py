"""Shards digested in forked workers give exactly the in-process audit, errors and findings included."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

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
    """Force the worker path on any checkpoint size; record whether each pool started workers. The pool
    forks only from a process with one thread: under pytest-xdist its worker has execnet's thread, and a
    test before this one (tests/hw) may leave one behind; what these tests prove is the workers' digests, so
    the pool here sees this process as single-threaded (test_threads_keep_the_digest_in_process checks the
    rule itself)."""
    seen: list[bool] = []
    monkeypatch.setattr(shardpool_module, "threading", SimpleNamespace(active_count=lambda: 1))
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


def test_a_bad_index_read_by_a_worker_is_reported_as_in_process(tmp_path: Path, started: list[bool]) -> None:
    root = _three_shards(tmp_path / "ckpt")
    index_path = root / "model.safetensors.index.json"
    index = orjson.loads(index_path.read_bytes())
    index["weight_map"]["model.layers.0.self_attn.q_proj.weight"] = 7  # a file name that is no string
    index_path.write_bytes(orjson.dumps(index))
    with pytest.raises(CheckpointError, match="weight_map must map tensor names to file names") as info:
        audit(root)
    assert info.value.path == str(index_path.resolve()) and started == [True]


def test_started_early_the_pool_is_taken_and_the_parent_digests_what_waits(
    seed000: Path, started: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``seatrial audit DIR`` starts the workers before its own imports; the audit then takes that pool
    (not a second one), and shards still waiting are digested here: the report is the same."""
    stolen: list[str] = []
    real_steal = shardpool_module.ShardPool._steal

    def spy(self: shardpool_module.ShardPool, shards: list[tuple[str, Path]]):  # type: ignore[no-untyped-def]
        for item in real_steal(self, shards):
            stolen.append(item[0])
            yield item

    monkeypatch.setattr(shardpool_module.ShardPool, "_steal", spy)
    shardpool_module.start_early(seed000)
    assert list(shardpool_module._EARLY) == [seed000.resolve()]
    early = summarize(scan(seed000))
    assert not shardpool_module._EARLY and started == [True]  # one pool, the early one
    monkeypatch.setattr(shardpool_module, "PARALLEL_MIN_HEADER_BYTES", 1 << 62)
    assert early.model_dump() == summarize(scan(seed000)).model_dump()
    assert len(stolen) < len(early.files)  # the workers digested some, whatever this process took


def test_start_early_leaves_a_bad_directory_to_the_audit(tmp_path: Path) -> None:
    shardpool_module.start_early(tmp_path / "missing")
    assert not shardpool_module._EARLY
    with pytest.raises(CheckpointError, match="is not a directory"):
        audit(tmp_path / "missing")


def test_the_command_line_starts_early_and_writes_the_same_report(seed000: Path, tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "a.json"
    cmd = [sys.executable, "-c", "import sys; from seatrial.cli import app; import seatrial.checkpoint.shardpool as s;"
           " real = s.start_early; s.start_early = lambda r: (print('early', r, file=sys.stderr), real(r));"
           " sys.argv = ['seatrial', *sys.argv[1:]]; app.main()", "audit", str(seed000), "--json", str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and f"early {seed000}" in done.stderr, done.stderr
    assert orjson.loads(out.read_bytes()) == audit(seed000).model_dump()


def test_threads_keep_the_digest_in_process(seed000: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process with a second thread never forks shard workers (a fork copies a lock another thread may
    hold): the pool digests in-process, with the same result."""
    monkeypatch.setattr(shardpool_module, "PARALLEL_MIN_HEADER_BYTES", 0)
    monkeypatch.setattr(shardpool_module, "threading", SimpleNamespace(active_count=lambda: 2))
    with shardpool_module.ShardPool(seed000) as pool:
        assert pool.parallel is False
    monkeypatch.setattr(shardpool_module, "threading", SimpleNamespace(active_count=lambda: 1))
    with shardpool_module.ShardPool(seed000) as pool:
        assert pool.parallel is True
