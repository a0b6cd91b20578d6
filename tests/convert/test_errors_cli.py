"""Clear errors on bad input, and the CLI's printed table and --json contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest
import torch
from replica import PLE, build_replica, convert
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from seatrial.checkpoint.convert import run
from seatrial.cli.app import app
from seatrial.errors import CheckpointError, ConfigError


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        convert(tmp_path / "nope", tmp_path / "dst")


def test_existing_destination_without_resume(replica: Path, tmp_path: Path) -> None:
    (tmp_path / "dst").mkdir()
    with pytest.raises(ConfigError, match="already exists; pass --resume"):
        convert(replica, tmp_path / "dst")


def test_pattern_matching_nothing(replica: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--embedding-fp8: pattern 'no_such_table' matches no tensor"):
        convert(replica, tmp_path / "dst", embedding_pattern="no_such_table")
    assert not (tmp_path / "dst").exists()


def test_gap_in_shard_numbering(replica: Path, tmp_path: Path) -> None:
    path = replica / "model-00002-of-00003.safetensors"
    tensors = load_file(str(path))
    del tensors[f"{PLE}.shard_3.weight"]
    save_file(tensors, str(path))
    index_path = replica / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    del index["weight_map"][f"{PLE}.shard_3.weight"]
    index_path.write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"not contiguous from 0 \(missing \[3\]\)"):
        convert(replica, tmp_path / "dst")


def test_non_finite_value_is_refused_before_writing(replica: Path, tmp_path: Path) -> None:
    path = replica / "model-00002-of-00003.safetensors"
    tensors = load_file(str(path))
    tensors[f"{PLE}.shard_4.weight"][7, 3] = float("nan")
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"shard_4\.weight: non-finite value"):
        convert(replica, tmp_path / "dst")
    assert not (tmp_path / "dst").exists()


def test_lm_head_that_is_not_fp8(tmp_path: Path) -> None:
    src = build_replica(tmp_path / "src")
    path = src / "model-00003-of-00003.safetensors"
    tensors = load_file(str(path))
    tensors["lm_head.weight"] = tensors["lm_head.weight"].to(torch.bfloat16)
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"lm_head\.weight is BF16, not 2-D FP8"):
        convert(src, tmp_path / "dst")


def test_bad_flags(replica: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--shards 9: the table has only 8"):
        convert(replica, tmp_path / "a", shards=9)
    with pytest.raises(ConfigError, match=r"'no_such\.key' does not exist"):
        convert(replica, tmp_path / "b", set_config=["no_such.key=1"])
    with pytest.raises(ConfigError, match=r"'layer_types\.9' does not exist"):
        convert(replica, tmp_path / "c", set_config=["layer_types.9=full_attention"])
    with pytest.raises(ConfigError, match="must not be the source"):
        convert(replica, replica / "inside")


def test_not_enough_space_is_refused_before_writing(
    replica: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(run.shutil, "disk_usage", lambda _: usage(10**6, 10**6 - 100, 100))
    with pytest.raises(CheckpointError, match=r"needs \d+ bytes for DST, only 100 free"):
        convert(replica, tmp_path / "dst")
    assert not (tmp_path / "dst").exists()


def test_cli_prints_fidelity_table_and_writes_json(replica: Path, tmp_path: Path) -> None:
    out_json = tmp_path / "convert.json"
    args = ["convert", str(replica), str(tmp_path / "dst"), "--lm-head-bf16", "--fidelity-row-stride", "1"]
    args += ["--set-config", "layer_types.1=full_attention", "--json", str(out_json)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(out_json.read_text())
    fid = payload["tables"][0]["fidelity"]
    for key in ("snr_db", "row_cosine_mean", "row_cosine_min", "flushed_to_zero_share"):
        assert isinstance(fid[key], float)
    assert all("precision_lost_bits" in s for s in fid["shards"])
    assert payload["lm_head"]["tensor"] == "lm_head.weight"
    assert f"{fid['snr_db']:.2f} dB" in result.output
    assert "row cosine min" in result.output and "flushed to zero" in result.output


def test_cli_maps_errors_to_a_message_and_exit_code(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    cmd = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "convert",
        str(tmp_path / "missing"),
        str(tmp_path / "d"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == ConfigError.exit_code  # a path that is not there is bad input, as for audit
    assert "does not exist" in proc.stderr and "missing" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_embedding_flag_without_pattern_is_a_clear_error(replica: Path, tmp_path: Path) -> None:
    args = ["convert", str(replica), str(tmp_path / "dst"), "--embedding-fp8", "--lm-head-bf16"]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, ConfigError)
    assert "--embedding-fp8 takes a PATTERN" in str(result.exception)
    assert not (tmp_path / "dst").exists()
    ok = CliRunner().invoke(app, [*args[:4], "default", "--lm-head-bf16", "--json", str(tmp_path / "o.json")])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "o.json").read_text())["tables"][0]["shard_tensors"] == 8


@pytest.mark.parametrize(
    ("extra", "error", "needle"),
    [
        (["--set-config", "noequals"], ConfigError, "'noequals' is not KEY=VALUE"),
        (["--set-config", "no_such.parent=1"], ConfigError, "'no_such.parent' does not exist in config.json"),
        (["--scale-name", " "], ConfigError, "--scale-name: the scale tensor needs a name"),
        (["--broken-config"], CheckpointError, "config.json: is not valid JSON"),
    ],
)
def test_every_option_and_the_config_are_checked_before_dst_is_written(
    replica: Path, tmp_path: Path, extra: list[str], error: type, needle: str
) -> None:
    """Issue 42 item 8: a bad edit was refused only after DST was written, and that half DST then blocked
    both a re-run and --resume."""
    if extra == ["--broken-config"]:
        (replica / "config.json").write_text("{not json")
        extra = []
    dst = tmp_path / "dst"
    result = CliRunner().invoke(app, ["convert", str(replica), str(dst), *extra])
    assert isinstance(result.exception, error) and needle in str(result.exception), result.output
    assert not dst.exists()
