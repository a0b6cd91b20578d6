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
