"""Benchmark: kill -9 ``seatrial convert`` at random points, then ``--resume``; 20 trials.

A trial succeeds when DST after the resume is byte-identical (every file, manifest included) to a clean
run's DST. Prints n/20 (target 20/20) and, per trial, when the kill landed and what DST held then.
Run: ``nice -n 10 env PYTHONPATH=src python benchmarks/convert_resume_kill.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIALS = 20
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{Path(__file__).parent}"}
BUILD = (
    "import sys; from pathlib import Path; from _replica import build; build(Path(sys.argv[1]), 16, 32 << 20)"
)
MANIFEST = "seatrial-convert-manifest.json"


def command(src: Path, dst: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "seatrial.cli.app", "convert", str(src), str(dst), "--lm-head-bf16", *extra]


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def state(dst: Path) -> str:
    """What a kill left: no DST, DST without index (n outputs done), or a finished DST."""
    if not dst.exists():
        return "no DST yet"
    manifest = json.loads((dst / MANIFEST).read_text())
    done = sum(o["status"] == "done" for o in manifest["outputs"])
    temps = len(list(dst.glob(".seatrial-tmp-*")))
    total = len(manifest["outputs"])
    return f"{done}/{total} outputs done, {temps} temporaries, complete={manifest['complete']}"


def wait_for(path: Path, proc: subprocess.Popen[bytes]) -> float:
    """Seconds until ``path`` exists (or the process ends), polled every 5 ms."""
    start = time.perf_counter()
    while not path.exists() and proc.poll() is None:
        time.sleep(0.005)
    return time.perf_counter() - start


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="seatrial-kill-", dir="/var/tmp"))
    rng = random.Random(20261129)
    try:
        src = work / "src"
        subprocess.run([sys.executable, "-c", BUILD, str(src)], check=True, env=ENV)
        start = time.perf_counter()
        proc = subprocess.Popen(command(src, work / "clean"), env=ENV, stdout=subprocess.DEVNULL)
        appear_s = wait_for(work / "clean", proc)
        proc.wait()
        clean_s = time.perf_counter() - start
        clean = tree_digest(work / "clean")
        write_s = clean_s - appear_s
        print(f"clean run: {clean_s:.2f} s, DST appeared at {appear_s:.2f} s, {len(clean)} files in DST")
        print("even trials: kill uniform over the whole run; odd trials: uniform over the write phase")
        identical = killed = 0
        for trial in range(TRIALS):
            dst = work / f"t{trial}"
            started = time.perf_counter()
            proc = subprocess.Popen(
                command(src, dst), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if trial % 2 == 0:
                delay = rng.uniform(0.05, 1.0) * clean_s
            else:
                delay = wait_for(dst, proc) + rng.uniform(0.0, 0.9) * write_s
            time.sleep(max(0.0, delay - (time.perf_counter() - started)))
            was_running = proc.poll() is None
            if was_running:
                os.kill(proc.pid, signal.SIGKILL)
                killed += 1
            proc.wait()
            left = state(dst)
            resumed = subprocess.run(command(src, dst, "--resume"), env=ENV, capture_output=True, text=True)
            same = resumed.returncode == 0 and tree_digest(dst) == clean
            identical += same
            how = "killed" if was_running else "had finished"
            print(f"trial {trial + 1:2d}: kill -9 at {delay:5.2f} s ({how}); DST then: {left}; "
                  f"resume rc={resumed.returncode}; identical={same}")  # fmt: skip
            shutil.rmtree(dst)
        print(f"killed mid-run in {killed}/{TRIALS} trials")
        print(f"byte-identical to the clean run after --resume: {identical}/{TRIALS}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
