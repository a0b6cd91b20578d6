"""Nothing outside the checkpoint directory is ever opened."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from tests.ckptgen.layouts import bf16
from tests.ckptgen.writer import write_safetensors

from seatrial.checkpoint import audit
from seatrial.checkpoint import header as header_module
from seatrial.errors import CheckpointError


def _ckpt(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    write_safetensors(root / "model.safetensors", bf16("model.embed_tokens.weight", 4, 8))
    index = {"metadata": {"total_size": 64}, "weight_map": files}
    (root / "model.safetensors.index.json").write_bytes(orjson.dumps(index))
    return root


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record every file the header reader opens."""
    seen: list[Path] = []
    real = header_module.read_header

    def spy(path: Path):  # type: ignore[no-untyped-def]
        seen.append(path)
        return real(path)

    monkeypatch.setattr("seatrial.checkpoint.digest.read_header", spy)
    return seen


@pytest.mark.parametrize("name", ["../outside.safetensors", "/etc/passwd", "sub/../../outside.safetensors"])
def test_index_naming_a_file_outside_is_rejected(tmp_path: Path, name: str, opened: list[Path]) -> None:
    write_safetensors(tmp_path / "outside.safetensors", bf16("x", 2))
    root = _ckpt(tmp_path / "ckpt", {"model.embed_tokens.weight": "model.safetensors", "x": name})
    with pytest.raises(CheckpointError, match="outside the checkpoint directory") as info:
        audit(root)
    assert info.value.path == str(root / "model.safetensors.index.json")
    assert opened == []


def test_symlink_out_of_the_directory_is_rejected(tmp_path: Path, opened: list[Path]) -> None:
    write_safetensors(tmp_path / "outside.safetensors", bf16("x", 2))
    root = _ckpt(
        tmp_path / "ckpt", {"model.embed_tokens.weight": "model.safetensors", "x": "link.safetensors"}
    )
    os.symlink(tmp_path / "outside.safetensors", root / "link.safetensors")
    with pytest.raises(CheckpointError, match="symlink out of the checkpoint directory") as info:
        audit(root)
    assert info.value.path == str(root / "link.safetensors")
    assert all(tmp_path / "outside.safetensors" != p for p in opened)


def test_symlink_inside_and_hf_cache_blobs_are_followed(tmp_path: Path) -> None:
    snapshot = tmp_path / "models--x" / "snapshots" / "abc"
    blobs = tmp_path / "models--x" / "blobs"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    write_safetensors(blobs / "deadbeef", bf16("model.embed_tokens.weight", 4, 8))
    os.symlink(blobs / "deadbeef", snapshot / "model.safetensors")
    assert audit(snapshot).total_bytes == 64


def test_missing_shard_and_bad_index_json(tmp_path: Path) -> None:
    root = _ckpt(tmp_path / "a", {"model.embed_tokens.weight": "model.safetensors", "x": "gone.safetensors"})
    with pytest.raises(CheckpointError, match="does not exist"):
        audit(root)
    (root / "model.safetensors.index.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON") as info:
        audit(root)
    assert info.value.path == str(root / "model.safetensors.index.json")


def test_empty_directory_and_non_directory(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"no \*\.safetensors"):
        audit(tmp_path)
    with pytest.raises(CheckpointError, match="is not a directory"):
        audit(tmp_path / "nope")


@pytest.mark.parametrize("command", ["audit", "plan"])
@pytest.mark.parametrize("kind", ["fifo", "loop"])
def test_a_fifo_or_a_symlink_loop_is_no_shard(tmp_path: Path, command: str, kind: str) -> None:
    """Issue 42 item 14: a FIFO named model.safetensors made audit wait forever on its open."""
    import subprocess
    import sys

    root = tmp_path / "ck"
    root.mkdir()
    (root / "config.json").write_bytes(orjson.dumps({"model_type": "llama", "num_hidden_layers": 2}))
    shard = root / "model.safetensors"
    if kind == "fifo":
        os.mkfifo(shard)
    else:
        os.symlink("other.safetensors", shard)
        os.symlink("model.safetensors", root / "other.safetensors")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "seatrial.cli.app", command, str(root)], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == CheckpointError.exit_code, done.stderr
    needle = "is not a regular file (a FIFO" if kind == "fifo" else "is a symlink loop"
    assert needle in done.stderr and "Traceback" not in done.stderr
