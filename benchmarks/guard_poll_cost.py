"""How cheap is the guard's memory poll?

Measures the CPU time of one poll sample (``MemInfoReader.sample``: one ``pread`` on a descriptor kept
open, three byte searches) against a peer, the plain way (open ``/proc/meminfo``, read it, split every
line into a dict), and against the default poll interval of 200 ms.

Run: PYTHONPATH=src python benchmarks/guard_poll_cost.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seatrial.guard.meminfo import MemInfoReader

SAMPLES = 20_000
POLL_MS = 200


def naive_sample() -> tuple[int, int]:
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) * 1024
    return fields["MemAvailable"], fields["SwapTotal"] - fields["SwapFree"]


def cpu_us_per_call(fn: object, n: int) -> float:
    start = time.process_time_ns()
    for _ in range(n):
        fn()  # type: ignore[operator]
    return (time.process_time_ns() - start) / n / 1000


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, fields 14 and 15


def guard_steady_cpu_s(window_s: float) -> float:
    """CPU seconds a running ``seatrial guard`` process spends over ``window_s`` of steady guarding
    (read from /proc/PID/stat after its start-up, so the interpreter's start-up is not counted)."""
    with tempfile.TemporaryDirectory() as tmp:
        history = Path(tmp) / "h.jsonl"
        argv = [
            sys.executable,
            "-m",
            "seatrial.cli.app",
            "guard",
            "--min-available-gib=0.1",
            f"--history={history}",
            "--",
            "sleep",
            "600",
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not history.exists() or not history.read_text():
                time.sleep(0.05)
            time.sleep(0.5)
            before = _cpu_ticks(proc.pid)
            time.sleep(window_s)
            after = _cpu_ticks(proc.pid)
        finally:
            proc.terminate()
            proc.wait()
    return (after - before) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    with MemInfoReader() as reader:
        reader.sample()
        naive_sample()
        guard_us = min(cpu_us_per_call(reader.sample, SAMPLES) for _ in range(3))
        naive_us = min(cpu_us_per_call(naive_sample, SAMPLES) for _ in range(3))
    print(f"guard sample: {guard_us:.1f} us CPU; plain open+parse: {naive_us:.1f} us CPU")
    print(f"ratio plain/guard: {naive_us / guard_us:.2f}x")
    print(f"sample CPU share at a {POLL_MS} ms poll: {guard_us / (POLL_MS * 1000) * 100:.4f} % of one core")
    window_s = 10.0
    steady_cpu_s = guard_steady_cpu_s(window_s)
    polls = window_s * 1000 / POLL_MS
    print(
        f"whole guard process, steady state: {steady_cpu_s * 1000:.0f} ms CPU over {window_s:.0f} s "
        f"({polls:.0f} polls; 10 ms tick resolution) = {steady_cpu_s / window_s * 100:.2f} % of one core"
    )


if __name__ == "__main__":
    main()
