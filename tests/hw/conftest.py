from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def h200_artifacts() -> dict[str, Any]:
    """Health readings and profiler traces recorded by `seatrial hw` on an NVIDIA H200 (evidence/h200)."""
    return json.loads((DATA / "h200_artifacts.json").read_text())


@pytest.fixture
def h200_burn() -> dict[str, Any]:
    """The burn trial's compute evidence and 61 telemetry samples recorded on the same H200."""
    return json.loads((DATA / "h200_burn.json").read_text())
