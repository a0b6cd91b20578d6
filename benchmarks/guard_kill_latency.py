"""How fast does the guard kill a memory hog after MemAvailable crosses the line?

Runs the real ``seatrial guard`` CLI on a shell whose python child (the hog in tests/guard/hog.py)
allocates and touches memory in 128 MiB steps, with the line 1.5 GiB under the current MemAvailable and
a budget of 2 restarts (3 kills). For each kill it prints an upper bound on crossing-to-gone (from the
hog's last step that still read MemAvailable above the line to the moment no group member was left),
the guard's reaction (the sample that tripped to the signal), and ratios to the poll interval and to
the issue's 2 s limit, all measured in this run.

Run: PYTHONPATH=src python benchmarks/guard_kill_latency.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOG = ROOT / "tests" / "guard" / "hog.py"
GIB = 1024**3
POLL_MS = 200
LIMIT_S = 2.0


def mem_available_bytes() -> int:
    line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemAvailable:"))
    return int(line.split()[1]) * 1024


def run(tmp: Path) -> tuple[int, list[dict], list[list[dict]]]:
    line_bytes = mem_available_bytes() - int(1.5 * GIB)
    log, history = tmp / "hog.jsonl", tmp / "history.jsonl"
    argv = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "guard",
        f"--min-available-gib={line_bytes / GIB:.3f}",
        "--restart-margin-gib=0.5",
        "--restart-budget=2",
        "--backoff=0.2s",
        "--recovery-timeout=30s",
        f"--poll-ms={POLL_MS}",
        f"--history={history}",
        "--",
        "sh",
        "-c",
        f"{sys.executable} {HOG} {log} 128 3072 0.02 3; echo hog-ended",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(argv, env=env, capture_output=True, timeout=180, check=False)
    events = [json.loads(x) for x in history.read_text().splitlines()]
    runs: list[list[dict]] = []
    for item in map(json.loads, log.read_text().splitlines()):
        if "pid" in item:
            runs.append([])
        else:
            runs[-1].append(item)
    return line_bytes, events, runs


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        line_bytes, events, runs = run(Path(tmp))
    kills = [e for e in events if e["event"] == "kill"]
    print(f"events: {[e['event'] for e in events]}")
    for n, (kill, steps) in enumerate(zip(kills, runs, strict=False), start=1):
        above = [s["t"] for s in steps if s["avail_bytes"] >= line_bytes]
        if not above:
            print(f"kill {n}: the hog never read MemAvailable above the line (other programs moved memory)")
            continue
        bound_s = kill["gone_at_unix_s"] - max(above)
        reaction_ms = (kill["signalled_at_unix_s"] - kill["time_unix_s"]) * 1000
        print(
            f"kill {n}: crossing-to-gone <= {bound_s * 1000:.0f} ms "
            f"({bound_s / (POLL_MS / 1000):.2f}x the {POLL_MS} ms poll, "
            f"{bound_s / LIMIT_S:.2f}x the 2 s limit); "
            f"sample-to-signal {reaction_ms:.1f} ms; {len(kill['members'])} members killed"
        )


if __name__ == "__main__":
    main()
