"""Helpers shared by the guard tests: run the real CLI, read /proc, wait for history lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
HOG = Path(__file__).resolve().parent / "hog.py"
GIB = 1024**3
KB_PER_GIB = 1024 * 1024


def write_meminfo(path: Path, available_gib: float, swap_used_gib: float = 0.0, swap_gib: float = 0.0) -> None:
    """Rewrite a stand-in /proc/meminfo in place (the guard keeps its descriptor open): its MemAvailable, and
    ``swap_used_gib`` of ``swap_gib`` swap in use."""
    text = (
        f"MemTotal: {64 * KB_PER_GIB} kB\nMemAvailable: {int(available_gib * KB_PER_GIB)} kB\n"
        f"SwapTotal: {int(swap_gib * KB_PER_GIB)} kB\nSwapFree: {int((swap_gib - swap_used_gib) * KB_PER_GIB)} kB\n"
    ).ljust(200)
    with path.open("r+b" if path.exists() else "wb") as fh:
        fh.write(text.encode())


def mem_available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable")


def guard_cli(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """Start ``seatrial guard ARGS`` as its own process (the real CLI, this worktree's code)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "seatrial.cli.app", "guard", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def stop_guard(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """End a guard started by a test: SIGTERM lets it kill its own group first; returns its output."""
    if proc.poll() is None:
        proc.terminate()
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out, err
