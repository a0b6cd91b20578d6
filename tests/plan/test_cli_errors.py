"""Bad flags and inputs become seatrial errors naming the flag or file."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.ckptgen.seed001 import write_config_2p4t
from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.errors import CheckpointError, ConfigError


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--tp", "0"], "--tp"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--hardware", "b3000"], "unknown profile 'b3000'"),
        (["--ep", "3"], "--ep 3"),
        (["--pp", "2", "--pp-layer-partition", "10,10"], "--pp-layer-partition 10,10"),
        (["--pp", "2", "--stage-hardware", "gb10x2"], "--stage-hardware names 1 stages"),
        (["--tp", "16"], "TP x PP x DP = 16 ranks"),
    ],
)
def test_bad_flags(tmp_path: Path, flags: list[str], needle: str) -> None:
    cfg = write_config_2p4t(tmp_path / "c.json", "NVFP4")
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg), "--hardware", "b300", *flags])
    assert isinstance(result.exception, ConfigError), result.output
    assert needle in str(result.exception)


def test_bad_config_file_names_it(tmp_path: Path) -> None:
    cfg = tmp_path / "broken.json"
    cfg.write_text("{")
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg), "--hardware", "h100"])
    assert isinstance(result.exception, CheckpointError) and str(cfg) in str(result.exception)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("hidden_size", "7168", "hidden_size must be an integer, got '7168'"),  # present, not "missing"
        ("hidden_size", 7168.5, "hidden_size must be an integer, got 7168.5"),
        ("num_hidden_layers", 10**9, "num_hidden_layers must be 1 to 100,000, got 1,000,000,000"),  # not 1e9 lists
        ("vocab_size", 1 << 50, "vocab_size must be 1 to 1,099,511,627,776"),
    ],
)
def test_a_config_value_of_the_wrong_type_or_size_is_named(tmp_path: Path, key: str, value: object, needle: str) -> None:
    import json

    cfg = write_config_2p4t(tmp_path / "c.json", "NVFP4")
    doc = json.loads(cfg.read_text())
    text = doc.get("text_config", doc)
    text[key] = value
    cfg.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg), "--hardware", "b300", "--gpu-memory-gib", "80"])
    assert isinstance(result.exception, ConfigError), result.output
    assert needle in str(result.exception)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_a_float_flag_is_a_finite_number(tmp_path: Path, value: str) -> None:
    cfg = write_config_2p4t(tmp_path / "c.json", "NVFP4")
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg), "--gpu-memory-gib", value])
    assert result.exit_code == 2 and f"'{value}' is not a finite number" in result.output
