"""The fast start's ``sitecustomize`` (server/fastgc): first on the path, it raises the young generation's
threshold in every Python that starts with it, and a ``sitecustomize`` further along still runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from seatrial.childenv import child_environ
from seatrial.server.engine import FAST_GC, FAST_START_ENV


def run(code: str, pythonpath: str) -> str:
    env = child_environ({"PYTHONPATH": pythonpath})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def test_the_fast_start_environment_raises_the_threshold() -> None:
    assert FAST_START_ENV["PYTHONPATH"] == str(FAST_GC) and (FAST_GC / "sitecustomize.py").is_file()
    assert run("import gc; print(gc.get_threshold())", FAST_START_ENV["PYTHONPATH"]).strip() == "(100000, 50, 100)"
    assert run("import gc; print(gc.get_threshold()[0])", "").strip() != "100000"  # not without it


def test_a_sitecustomize_further_along_the_path_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import gc\nprint('theirs', gc.get_threshold()[0])\n")
    out = run("import sitecustomize; print('module', sitecustomize.__file__)", f"{FAST_GC}:{tmp_path}")
    assert out.splitlines() == ["theirs 100000", f"module {tmp_path / 'sitecustomize.py'}"]
