"""Profiles: the shipped default at both scales, validation errors that name the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.errors import ConfigError
from seatrial.trials.profile import TRIAL_NAMES, deep_merge, load_profile


def test_default_profile_full_and_small() -> None:
    full, small = load_profile(None, "full"), load_profile(None, "small")
    assert full.run == list(TRIAL_NAMES) == small.run and (full.scale, small.scale) == ("full", "small")
    assert full.trials.saturation.ladder == [64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
    assert small.trials.saturation.ladder == [2, 4, 8, 16]
    assert full.slo.percentile == 99 and small.slo.percentile == 90
    # small overrides only what it names; the rest stays at the full values
    assert small.trials.saturation.plateau_gain == full.trials.saturation.plateau_gain
    assert small.trials.prefix_cache.prefix_len < full.trials.prefix_cache.prefix_len


def test_deep_merge_keeps_unnamed_keys() -> None:
    assert deep_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 9}}) == {"a": {"b": 9, "c": 2}, "d": 3}


def test_unknown_field_names_the_file_and_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("trials:\n  saturation:\n    ladder: [1, 2]\n    ladderr: [3]\n")
    with pytest.raises(ConfigError) as err:
        load_profile(bad, "full")
    assert str(bad) in str(err.value) and "trials.saturation.ladderr" in str(err.value)


def test_unknown_trial_in_run_and_unreadable_yaml(tmp_path: Path) -> None:
    p = tmp_path / "p.yaml"
    p.write_text("run: [basic, warp-drive]\n")
    with pytest.raises(ConfigError, match="warp-drive"):
        load_profile(p, "small")
    p.write_text("run: [basic\n")
    with pytest.raises(ConfigError, match=str(p)):
        load_profile(p, "full")


def test_cli_rejects_unknown_trial_and_scale() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["accept", "--url", "http://127.0.0.1:9", "--trials", "basic,bogus"])
    assert isinstance(result.exception, ConfigError) and "bogus" in str(result.exception)
    result = runner.invoke(app, ["accept", "--url", "http://127.0.0.1:9", "--scale", "tiny"])
    assert isinstance(result.exception, ConfigError) and "--scale" in str(result.exception)
