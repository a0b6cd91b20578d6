"""Fixtures for the convert tests; the replica builder and helpers live in replica.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from replica import build_replica, compiled_or_skip

from seatrial.checkpoint.convert import kernels


@pytest.fixture
def replica(tmp_path: Path) -> Path:
    return build_replica(tmp_path / "src")


@pytest.fixture(params=["c", "numpy"])
def loops(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the compiled loops and once with the numpy ones."""
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "_C", None)
    else:
        compiled_or_skip()
    return str(request.param)
