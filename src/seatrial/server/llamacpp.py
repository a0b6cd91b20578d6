"""llama.cpp's ``llama-server`` as a local engine: the binary that scripts/setup_llamacpp.sh builds (CPU) from
the source vendored in PyPI's llama-cpp-python sdist, a GGUF of the tests' tiny model (server/llamagguf.py
run with that source's ``gguf-py``), and the command line that serves it (:class:`LlamaSpec`, started by
:class:`seatrial.server.engine.LocalEngine` like vLLM's ``EngineSpec``).

``$SEATRIAL_LLAMACPP_DIR`` (default ``~/.cache/seatrial/llama.cpp``) holds ``llama-server``, its ready marker
``.seatrial-ready`` and the source tree ``src/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from seatrial.errors import EngineError
from seatrial.server.engine import TINYMODEL

LLAMAGGUF = Path(__file__).with_name("llamagguf.py")
READY = ".seatrial-ready"


def llamacpp_dir() -> Path:
    return Path(os.environ.get("SEATRIAL_LLAMACPP_DIR", Path.home() / ".cache/seatrial/llama.cpp"))


def llama_server() -> Path:
    """The built ``llama-server``; EngineError where scripts/setup_llamacpp.sh has not built it."""
    binary = llamacpp_dir() / "llama-server"
    if not (llamacpp_dir() / READY).exists() or not binary.exists():
        raise EngineError(f"no llama-server at {binary}: run scripts/setup_llamacpp.sh (or set SEATRIAL_LLAMACPP_DIR)")
    return binary


def gguf_env(source: Path | None = None) -> dict[str, str]:
    """This process's environment with llama.cpp's own ``gguf-py`` first on PYTHONPATH."""
    gguf_py = (source or llamacpp_dir() / "src") / "gguf-py"
    if not (gguf_py / "gguf").is_dir():
        raise EngineError(f"no gguf-py at {gguf_py}: run scripts/setup_llamacpp.sh")
    theirs = os.environ.get("PYTHONPATH")
    return os.environ | {"PYTHONPATH": f"{gguf_py}{os.pathsep}{theirs}" if theirs else str(gguf_py)}


def make_tiny_gguf(out: Path, max_len: int = 8192) -> Path:
    """The tests' tiny model (server/tinymodel.py: its config and byte-level BPE tokenizer) as
    ``out/tiny.gguf`` with random F16 weights; ``out`` also keeps the HF folder it was made from."""
    hf = out / "hf"
    for cmd, env in (
        ([sys.executable, str(TINYMODEL), str(hf), str(max_len)], None),
        ([sys.executable, str(LLAMAGGUF), str(out / "tiny.gguf"), "--hf-dir", str(hf)], gguf_env()),
    ):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise EngineError(f"{Path(cmd[1]).name} failed: {done.stderr.strip()[-400:]}")
    return out / "tiny.gguf"


@dataclass
class LlamaSpec:
    """``llama-server`` serving one GGUF. ``ctx_size`` is the whole KV cache in tokens; with ``kv_unified``
    every slot may use all of it (as vLLM's requests share one pool), else each of the ``parallel`` slots
    gets ``ctx_size / parallel``. ``--metrics`` is always on (the server view reads it)."""

    model: Path
    port: int = 0
    served_name: str = "tiny"
    ctx_size: int = 8192
    parallel: int = 4
    kv_unified: bool = True
    threads: int | None = None
    extra_args: list[str] = field(default_factory=list)
    wrapper: list[str] = field(default_factory=list)  # e.g. `seatrial guard ... --` in front of the server
    startup_timeout_s: float = 120.0
    serve_nice: int | None = None
    binary: Path | None = None  # default: llama_server()
    label: str = "llama-server"

    def env(self) -> dict[str, str]:
        return {}

    def serve_command(self) -> list[str]:
        """``argv`` with the port left as ``{port}`` (an experiment plan's ``serve.command``)."""
        return self.argv("{port}")

    def argv(self, port: int | str) -> list[str]:
        args = [*self.wrapper, str(self.binary or llama_server()), "--model", str(self.model),
                "--alias", self.served_name, "--host", "127.0.0.1", "--port", str(port),
                "--ctx-size", str(self.ctx_size), "--parallel", str(self.parallel), "--metrics"]  # fmt: skip
        args.append("--kv-unified" if self.kv_unified else "--no-kv-unified")
        if self.threads:
            args += ["--threads", str(self.threads)]
        return args + self.extra_args
