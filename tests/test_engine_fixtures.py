"""The session engines' bookkeeping (tests/engine_fixtures.SessionEngines), with engines that only say whether
they came up: a batch is launched together, kept only once all of it is ready, and stopped whole where one
of it fails, so that no later test is handed a stopped engine."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.engine_fixtures import SessionEngines

from seatrial.errors import EngineError


class Engine:
    """Stands in for a LocalEngine: ready or not, and whether it was stopped."""

    def __init__(self, name: str, fails: bool) -> None:
        self.name, self.fails, self.stopped = name, fails, False

    def wait_ready(self) -> None:
        if self.fails:
            raise EngineError(f"{self.name} did not come up")

    def stop(self) -> None:
        self.stopped = True


class Launchers(dict):
    """name -> launcher; every engine launched is kept in ``launched``; names in ``failing`` fail once."""

    def __init__(self, *names: str, failing: tuple[str, ...] = ()) -> None:
        super().__init__({n: self.launcher(n) for n in names})
        self.launched: list[Engine] = []
        self.failing = set(failing)

    def launcher(self, name: str):
        def launch(tmp: Path, model: Path) -> Engine:
            assert tmp.is_dir() and tmp.name.startswith(name)
            engine = Engine(name, name in self.failing)
            self.failing.discard(name)
            self.launched.append(engine)
            return engine

        return launch


def items(*fixtures: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(fixturenames=[f]) for f in fixtures]


def test_the_engines_the_tests_need_start_together_and_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    launchers = Launchers("a", "b", "unused")
    engines = SessionEngines(launchers, tmp_path_factory, Path("model"), items("b", "a", "tmp_path", "b"))
    assert engines.needed == ["a", "b"]
    b = engines["b"]
    assert [e.name for e in launchers.launched] == ["b", "a"]  # the one asked for first, then the rest
    assert engines["a"] is launchers.launched[1] and engines["b"] is b and len(launchers.launched) == 2
    engines.stop()
    assert all(e.stopped for e in launchers.launched)


def test_an_engine_no_test_foresaw_starts_alone(tmp_path_factory: pytest.TempPathFactory) -> None:
    launchers = Launchers("a", "late")
    engines = SessionEngines(launchers, tmp_path_factory, Path("model"), items("a"))
    engines["a"]
    engines["late"]
    assert [e.name for e in launchers.launched] == ["a", "late"]


def test_one_engine_failing_stops_its_whole_batch_and_keeps_none(tmp_path_factory: pytest.TempPathFactory) -> None:
    launchers = Launchers("a", "b", failing=("b",))
    engines = SessionEngines(launchers, tmp_path_factory, Path("model"), items("a", "b"))
    with pytest.raises(pytest.fail.Exception, match="b did not come up"):
        engines["a"]
    first = list(launchers.launched)
    assert [e.name for e in first] == ["a", "b"] and all(e.stopped for e in first)
    assert engines.engines == {}
    a = engines["a"]  # the next test that asks launches afresh, and gets an engine that is up
    assert a not in first and not a.stopped and len(launchers.launched) == 4
