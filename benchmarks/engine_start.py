"""Benchmark: how long a tiny vLLM-CPU takes to be ready, as seatrial starts it fast (FAST_START and
FAST_START_ENV, ``fastgc/sitecustomize.py`` first on the path), against the same start without that one
file (the peer: Python's default collection thresholds), measured in the same run.

The two starts alternate for ROUNDS rounds (so drift hits both alike); each is timed from launch to a
healthy server that lists its model (``LocalEngine.wait_ready``), then stopped. Prints every start, the
medians, their ratio, and the thresholds each engine Python got. Run on a quiet machine:
``.venv/bin/python benchmarks/engine_start.py [ROUNDS]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seatrial.childenv import child_environ
from seatrial.server.engine import EngineSpec, LocalEngine, engine_python, make_tiny_model


class DefaultGC(EngineSpec):
    """The same fast start with Python's own collection thresholds."""

    def env(self) -> dict[str, str]:
        env = super().env()
        env.pop("PYTHONPATH")
        return env


def thresholds(spec: EngineSpec) -> str:
    """gc.get_threshold() in the engine's Python under ``spec``'s environment."""
    done = subprocess.run([str(engine_python()), "-c", "import gc; print(gc.get_threshold())"],
                          env=child_environ(spec.env()), capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def ready_s(spec: EngineSpec, log: Path) -> float:
    t = time.monotonic()
    with LocalEngine(spec, log):
        return time.monotonic() - t


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory(prefix="seatrial-start-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        specs = {"fast-gc": EngineSpec(model_dir=model), "default-gc": DefaultGC(model_dir=model)}
        for name, spec in specs.items():
            print(f"# {name}: engine Python's gc thresholds {thresholds(spec)}", flush=True)
        times: dict[str, list[float]] = {name: [] for name in specs}
        for r in range(rounds):
            for name, spec in (specs.items() if r % 2 == 0 else reversed(specs.items())):
                times[name].append(ready_s(spec, Path(tmp) / f"{name}-{r}.log"))
                print(f"round {r + 1}: {name} ready in {times[name][-1]:.1f} s", flush=True)
    fast, default = (statistics.median(times[n]) for n in ("fast-gc", "default-gc"))
    print(f"median ready: fast-gc {fast:.1f} s, default-gc {default:.1f} s over {rounds} rounds each")
    print(f"ratio fast-gc / default-gc: {fast / default:.2f} ({default - fast:.1f} s less per start)")


if __name__ == "__main__":
    main()
