"""Hardware profiles, stage parsing and local detection."""

from __future__ import annotations

import pytest

from seatrial.errors import ConfigError
from seatrial.plan import hardware
from seatrial.plan.hardware import GB, GIB, parse_stage, resolve


def test_profiles_use_the_vendors_units() -> None:
    assert resolve("gb10").memory_bytes == 121 * GIB and resolve("gb10").unified
    assert resolve("b300").memory_bytes == 288 * GB and not resolve("b300").unified
    assert 8 * resolve("b300").memory_bytes == 2_304 * GB
    assert resolve("h200").memory_bytes == 141 * GB and resolve("rtx-3090").memory_bytes == 24 * GB


def test_custom_needs_memory_and_unknown_names_fail() -> None:
    assert resolve("custom", 40).memory_bytes == 40 * GIB
    with pytest.raises(ConfigError, match="--gpu-memory-gib"):
        resolve("custom")
    with pytest.raises(ConfigError, match="unknown profile 'b3000'"):
        resolve("b3000")


def test_parse_stage() -> None:
    hw, count = parse_stage("rtx-3090x2")
    assert (hw.name, count) == ("rtx-3090", 2)
    with pytest.raises(ConfigError, match="NAMExCOUNT"):
        parse_stage("gb10")


def test_local_without_nvidia_smi_is_the_cpu_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardware.shutil, "which", lambda _: None)
    local = resolve("local")
    assert local.cpu and local.unified and local.memory_bytes > GIB
