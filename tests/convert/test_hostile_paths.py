"""Nothing outside SRC is read and nothing outside DST is written, whatever the index names
(issue 16, items 1 and 3): the converter resolves every name through the resolver audit uses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from replica import build_replica
from tests.clirun import invoke

from seatrial.checkpoint import audit
from seatrial.errors import CheckpointError

INDEX = "model.safetensors.index.json"
SHARD = "model-00003-of-00003.safetensors"


def _rename_in_index(src: Path, old: str, new: str) -> None:
    path = src / INDEX
    index = json.loads(path.read_text())
    index["weight_map"] = {k: (new if v == old else v) for k, v in index["weight_map"].items()}
    path.write_text(json.dumps(index))


@pytest.fixture
def side_by_side(tmp_path: Path) -> tuple[Path, Path, Path]:
    """SRC and DST side by side with a victim folder beside them, holding a copy of one shard."""
    src = build_replica(tmp_path / "src")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / SHARD).write_bytes((src / SHARD).read_bytes())
    return src, tmp_path / "dst", victim


def _convert(src: Path, dst: Path) -> tuple[int, str]:
    result = invoke(["convert", str(src), str(dst), "--lm-head-bf16"])
    return result.code, result.output


def _unchanged(victim: Path, before: dict[str, tuple[int, int]]) -> bool:
    return {p.name: (p.stat().st_ino, p.stat().st_size) for p in victim.iterdir()} == before


@pytest.mark.parametrize("kind", ["relative", "absolute", "dot", "symlinked-shard"])
def test_hostile_index_refused_by_convert_and_audit(side_by_side: tuple[Path, Path, Path], kind: str) -> None:
    src, dst, victim = side_by_side
    if kind == "relative":
        _rename_in_index(src, SHARD, f"../victim/{SHARD}")
        (src / SHARD).unlink()
    elif kind == "absolute":
        _rename_in_index(src, SHARD, str(victim / SHARD))
        (src / SHARD).unlink()
    elif kind == "dot":
        _rename_in_index(src, SHARD, ".")
    else:
        (src / SHARD).unlink()
        os.symlink(victim / SHARD, src / SHARD)
    before = {p.name: (p.stat().st_ino, p.stat().st_size) for p in victim.iterdir()}
    code, output = _convert(src, dst)
    assert code == 3, output
    assert "outside the checkpoint directory" in output or "symlink out of the checkpoint" in output
    assert not dst.exists() and _unchanged(victim, before)
    with pytest.raises(
        CheckpointError, match=r"outside the checkpoint directory|symlink out of the checkpoint"
    ):
        audit(src)


def test_symlinked_config_and_other_files_are_refused(side_by_side: tuple[Path, Path, Path]) -> None:
    src, dst, victim = side_by_side
    (victim / "secret.json").write_text("{}")
    os.symlink(victim / "secret.json", src / "tokenizer_extra.json")
    code, output = _convert(src, dst)
    assert code == 3 and "symlink out of the checkpoint" in output and not dst.exists()


def test_symlinked_folder_is_not_walked_into(side_by_side: tuple[Path, Path, Path]) -> None:
    src, dst, victim = side_by_side
    os.symlink(victim, src / "extra")
    code, output = _convert(src, dst)
    assert code == 3 and "symlinked folder" in output and not dst.exists()


def test_blobs_linked_out_of_the_cache_is_refused(tmp_path: Path) -> None:
    """A Hugging Face cache whose ``blobs`` is a link to ``/`` must not let a snapshot read the host."""
    cache = tmp_path / "models--x"
    snapshot = cache / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    os.symlink("/", cache / "blobs")
    os.symlink("/etc/passwd", snapshot / "model.safetensors")
    with pytest.raises(CheckpointError, match="symlink out of the checkpoint directory"):
        audit(snapshot)
    assert invoke(["audit", str(snapshot)]).code == 3


def test_dot_in_weight_map_is_exit_3_not_a_traceback(tmp_path: Path) -> None:
    src = build_replica(tmp_path / "src")
    _rename_in_index(src, SHARD, ".")
    result = invoke(["audit", str(src)])
    assert result.code == 3 and "outside the checkpoint directory" in result.output
