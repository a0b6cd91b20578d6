"""Fixtures for the convert tests; the replica builder and helpers live in replica.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from replica import build_replica


@pytest.fixture
def replica(tmp_path: Path) -> Path:
    return build_replica(tmp_path / "src")
