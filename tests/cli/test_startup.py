"""Start-up: each command imports only what it uses (``--help`` imports no capability), and what seatrial
sets for itself (numpy's BLAS threads, pydantic's plugin scan) never reaches the processes it starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from seatrial import childenv
from seatrial.cli.app import COMMANDS


def test_quiet_blas_and_plugins_stay_out_of_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(childenv, "_SET", {})
    childenv.quiet_blas()
    childenv.quiet_plugins()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
    child = childenv.child_environ({"X": "1"})
    assert "OPENBLAS_NUM_THREADS" not in child and "PYDANTIC_DISABLE_PLUGINS" not in child and child["X"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's own choice is theirs, and travels
    assert childenv.child_environ()["OPENBLAS_NUM_THREADS"] == "4"


def test_every_child_gets_nvlink_multicast_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 in every
    child's environment, over an inherited value; a caller's explicit ``extra`` still wins."""
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    monkeypatch.delenv("NVSHMEM_DISABLE_NVLS", raising=False)
    child = childenv.child_environ()
    assert {k: child[k] for k in childenv.SAFE_NCCL_ENV} == {
        "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}  # fmt: skip
    assert childenv.child_environ({"NCCL_NVLS_ENABLE": "1"})["NCCL_NVLS_ENABLE"] == "1"


#: pydantic too: options from the settings models come from their table (cli/fields.py)
HEAVY = ("numpy", "aiohttp", "matplotlib", "jinja2", "scipy", "ml_dtypes", "torch", "ray", "seatrial.load.bench", "seatrial.load.level",
         "asyncio", "rich", "seatrial.runs.levels", "seatrial.runs.summaries.bench", "pydantic")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_imports_no_heavy_library(command: str) -> None:
    code = (
        f"import sys; sys.argv = ['seatrial', {command!r}, '--help']\n"
        "from seatrial.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out[-500:]
