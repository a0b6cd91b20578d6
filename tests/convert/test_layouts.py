"""Other source layouts: a single model.safetensors without index, and safetensors metadata of outputs."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
import torch
from replica import PLE, convert, lm_head_tensors, ple_tensors
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from seatrial.checkpoint.convert import atomic
from seatrial.errors import CheckpointError


def test_single_file_source_gets_an_index_and_no_shadowing_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    tensors = {**ple_tensors(), **lm_head_tensors(), "model.norm.weight": torch.ones(8, dtype=torch.bfloat16)}
    save_file(tensors, str(src / "model.safetensors"), metadata={"format": "pt"})
    result = convert(src, tmp_path / "dst")
    dst = tmp_path / "dst"
    assert not (dst / "model.safetensors").exists()  # transformers would load it and ignore the index
    index = json.loads((dst / "model.safetensors.index.json").read_text())
    assert index["weight_map"]["lm_head.weight"] == "model-00001-of-00001.safetensors"
    assert index["weight_map"]["model.norm.weight"] == "model-00001-of-00001.safetensors"
    assert set(index["weight_map"]) == (set(tensors) - {"lm_head.weight_scale"}) | {f"{PLE}.weight_scale"}
    assert len(result.tables[0].output_files) == 8
    rest = load_file(str(dst / "model-00001-of-00001.safetensors"))
    assert rest["lm_head.weight"].dtype == torch.bfloat16
    assert torch.equal(rest["model.norm.weight"], tensors["model.norm.weight"])


def test_every_written_file_carries_format_pt_metadata(replica: Path, tmp_path: Path) -> None:
    result = convert(replica, tmp_path / "dst")
    written = [*result.tables[0].output_files, "model-00003-of-00003.safetensors"]
    for name in written:
        with safe_open(str(tmp_path / "dst" / name), framework="pt") as fh:
            assert fh.metadata() == {"format": "pt"}, name


def test_shard_count_must_match_config_split_ngram_parts(replica: Path, tmp_path: Path) -> None:
    config = json.loads((replica / "config.json").read_text())
    config["ple_config"]["split_ngram_parts"] = 128
    (replica / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        CheckpointError, match=r"8 shard tensors, config\.json declares split_ngram_parts=128"
    ):
        convert(replica, tmp_path / "dst")


def test_untouched_files_are_copied_when_links_fail(
    replica: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(atomic.os, "link", no_link)
    result = convert(replica, tmp_path / "dst")
    assert (result.files["hardlink"], result.files["copy"]) == (0, 2)
    for name in ("model-00001-of-00003.safetensors", "tokenizer.json"):
        copied, original = tmp_path / "dst" / name, replica / name
        assert copied.stat().st_ino != original.stat().st_ino
        assert copied.read_bytes() == original.read_bytes()
