"""The fast start's ``sitecustomize`` (server/faststart): first on the path, it raises the young generation's
threshold and answers a ``spawn`` context with ``fork`` in every Python that starts with it, and a
``sitecustomize`` further along still runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from seatrial.childenv import child_environ
from seatrial.experiment.plan import Serve
from seatrial.server.engine import FAST_START, FAST_START_ENV, FAST_START_SHIM, EngineSpec

SPAWNED = (  # MARK is set by the parent at run time: a forked child has it, a spawned one imports afresh without
    "import multiprocessing as mp\n"
    "def child(q): q.put('MARK' in globals())\n"
    "if __name__ == '__main__':\n"
    "    MARK = 1\n"
    "    ctx = mp.get_context('spawn'); q = ctx.Queue(); p = ctx.Process(target=child, args=(q,)); p.start()\n"
    "    print(ctx.get_start_method(), q.get()); p.join()\n"
)


def run(code: str, pythonpath: str, cwd: Path | None = None) -> str:
    env = child_environ({"PYTHONPATH": pythonpath})
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=cwd
    )
    return done.stdout


def test_the_fast_start_environment_raises_the_threshold() -> None:
    assert (
        FAST_START_ENV["PYTHONPATH"] == str(FAST_START_SHIM)
        and (FAST_START_SHIM / "sitecustomize.py").is_file()
    )
    assert (
        run("import gc; print(gc.get_threshold())", FAST_START_ENV["PYTHONPATH"]).strip()
        == "(100000, 50, 100)"
    )
    assert run("import gc; print(gc.get_threshold()[0])", "").strip() != "100000"  # not without it


def test_a_spawn_context_forks_under_the_shim(tmp_path: Path) -> None:
    (tmp_path / "spawned.py").write_text(SPAWNED)
    code = "import runpy; runpy.run_path('spawned.py', run_name='__main__')"
    assert run(code, FAST_START_ENV["PYTHONPATH"], tmp_path).strip() == "fork True"
    assert run(code, "", tmp_path).strip() == "spawn False"  # not without it
    forkserver = "import multiprocessing as mp; print(mp.get_context('forkserver').get_start_method())"
    assert run(forkserver, FAST_START_ENV["PYTHONPATH"]).strip() == "forkserver"  # other methods as asked


def test_a_sitecustomize_further_along_the_path_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import gc\nprint('theirs', gc.get_threshold()[0])\n")
    out = run(
        "import sitecustomize; print('module', sitecustomize.__file__)", f"{FAST_START_SHIM}:{tmp_path}"
    )
    assert out.splitlines() == ["theirs 100000", f"module {tmp_path / 'sitecustomize.py'}"]


def test_a_plans_serve_command_is_the_engines_argv_with_its_port_left_to_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's experiment and the experiment test start their servers from ``serve_command``: the very
    argv a LocalEngine of the same spec runs, fast-start flags included, with ``{port}`` for each start."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    monkeypatch.setenv("SEATRIAL_ENGINE_VENV", str(tmp_path))
    spec = EngineSpec(model_dir=tmp_path / "model", max_model_len=1024, kv_cache_gib=1)
    command = spec.serve_command()
    assert [part.replace("{port}", "8123") for part in command] == spec.argv(8123)
    assert command[command.index("--port") + 1] == "{port}" and set(FAST_START) <= set(command)
    assert Serve(command=command, env=spec.env()).command == command  # a plan takes it as it is


def test_the_shim_goes_in_front_of_the_users_own_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast start adds the shim to the engine's PYTHONPATH; what the user had there is kept behind it, as
    an engine started without the fast start inherits it."""
    spec = EngineSpec(model_dir=tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert spec.env()["PYTHONPATH"] == str(FAST_START_SHIM)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}/a:{tmp_path}/b")
    assert spec.env()["PYTHONPATH"] == f"{FAST_START_SHIM}:{tmp_path}/a:{tmp_path}/b"
    assert "PYTHONPATH" not in EngineSpec(model_dir=tmp_path, fast_start=False).env()  # inherited as it is
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "theirs.py").write_text("print('theirs')\n")
    out = run("import theirs, gc; print(gc.get_threshold()[0])", spec.env()["PYTHONPATH"])
    assert out.split() == ["theirs", "100000"]
