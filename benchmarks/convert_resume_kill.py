"""Benchmark: kill -9 ``seatrial convert`` at random points, then ``--resume``; 20 trials.

A trial succeeds when DST after the resume is byte-identical (every file, manifest included) to a clean
run's DST. Even trials kill at a uniform random time over the clean run's duration; odd trials kill as
soon as DST holds a uniform random share of its final bytes (so the kill lands inside the write phase
whatever the machine's load). Prints n/20 (target 20/20) and, per trial, what DST held at the kill.
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
    "import sys; from pathlib import Path; from convert_vs_cp import build;"
    "build(Path(sys.argv[1]), 16, 16 << 20)"
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


def dst_bytes(dst: Path) -> int:
    """Bytes under ``dst`` now (temporaries included); 0 before it exists."""
    try:
        return sum(p.stat().st_size for p in dst.rglob("*") if p.is_file())
    except FileNotFoundError:  # a temporary renamed between listing and stat
        return 0


def kill_when(dst: Path, proc: subprocess.Popen[bytes], target_bytes: int) -> None:
    """Poll every 2 ms until DST holds ``target_bytes`` (or the process ends)."""
    while proc.poll() is None and dst_bytes(dst) < target_bytes:
        time.sleep(0.002)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="seatrial-kill-", dir="/var/tmp"))
    rng = random.Random(20261129)
    try:
        src = work / "src"
        subprocess.run([sys.executable, "-c", BUILD, str(src)], check=True, env=ENV)
        start = time.perf_counter()
        subprocess.run(command(src, work / "clean"), check=True, env=ENV, capture_output=True)
        clean_s = time.perf_counter() - start
        clean = tree_digest(work / "clean")
        final_bytes = dst_bytes(work / "clean")
        print(f"clean run: {clean_s:.2f} s, {len(clean)} files, {final_bytes:,} bytes in DST")
        identical = killed = 0
        for trial in range(TRIALS):
            dst = work / f"t{trial}"
            started = time.perf_counter()
            proc = subprocess.Popen(
                command(src, dst), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if trial % 2 == 0:
                delay = rng.uniform(0.0, 1.0) * clean_s
                time.sleep(delay)
                point = f"at {delay:5.2f} s"
            else:
                share = rng.uniform(0.0, 1.0)
                kill_when(dst, proc, int(share * final_bytes))
                point = f"at {share:4.0%} of DST bytes ({time.perf_counter() - started:5.2f} s)"
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
            print(f"trial {trial + 1:2d}: kill -9 {point} ({how}); DST then: {left}; "
                  f"resume rc={resumed.returncode}; identical={same}")  # fmt: skip
            shutil.rmtree(dst)
        print(f"killed mid-run in {killed}/{TRIALS} trials")
        print(f"byte-identical to the clean run after --resume: {identical}/{TRIALS}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
