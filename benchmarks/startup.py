"""Benchmark: how long ``seatrial CMD --help`` takes for every command, against the interpreter's own
start-up (``python -c pass``, the floor no command can go under) measured in the same run.

Each command runs 7 times in turn with the floor (interleaved, so drift hits both alike); the median is
kept. Prints per command its median wall time, the part above the floor, and whether it is within the
0.3 s target. Run: ``PYTHONPATH=src python benchmarks/startup.py`` on a quiet machine.
``STARTUP_FIRST_PATH=DIR`` puts DIR before ``src`` on the commands' path, to time the same code with another
version of a dependency installed there (``pip install --target DIR typer==0.29.2``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST = os.environ.get("STARTUP_FIRST_PATH")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([*([FIRST] if FIRST else []), str(ROOT / "src")])}
ROUNDS = 7
TARGET_S = 0.3


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from seatrial.cli.app import COMMANDS

    floor: list[float] = []
    times: dict[str, list[float]] = {c: [] for c in COMMANDS}
    for _ in range(ROUNDS):
        for command in COMMANDS:
            floor.append(wall([sys.executable, "-c", "pass"]))
            times[command].append(wall([sys.executable, "-m", "seatrial.cli.app", command, "--help"]))
    base = statistics.median(floor)
    if FIRST:
        print(f"first on the path: {FIRST}")
    print(f"python -c pass: {base * 1000:.0f} ms (median of {len(floor)})")
    print(f"{'command':<12} {'median ms':>10} {'above floor ms':>15} {'x floor':>8}  within {TARGET_S:g} s")
    worst = 0.0
    for command, ts in times.items():
        m = statistics.median(ts)
        worst = max(worst, m)
        print(f"{command:<12} {m * 1000:>10.0f} {(m - base) * 1000:>15.0f} {m / base:>8.2f}  {'yes' if m <= TARGET_S else 'NO'}")
    print(f"slowest --help: {worst * 1000:.0f} ms = {worst / base:.2f}x the interpreter's start-up; "
          f"target {TARGET_S * 1000:.0f} ms: {'met' if worst <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
