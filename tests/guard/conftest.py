"""Fixtures of the guard tests."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest


@pytest.fixture
def outsider() -> Any:
    """A process outside any guarded group, which must survive every guard test."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()
