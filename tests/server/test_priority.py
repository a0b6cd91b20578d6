"""A server lowered once ready (server.process.lower_priority): every thread of it and of its children, and
its session's autogroup (where the kernel schedules by autogroup), not the caller's."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil

from seatrial.server.process import ServerProcess, free_port

CHILD = """
import os, subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
time.sleep(60)
"""


def _threads(pid: int) -> dict[int, int]:
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return {t.id: os.getpriority(os.PRIO_PROCESS, t.id) for p in procs for t in p.threads()}


def test_every_thread_of_the_group_and_its_autogroup_are_lowered(tmp_path: Path) -> None:
    server = ServerProcess([sys.executable, "-c", CHILD], tmp_path / "log", port=free_port())
    try:
        deadline = time.monotonic() + 30
        while len(psutil.Process(server.proc.pid).children()) < 1 or len(_threads(server.proc.pid)) < 3:
            assert time.monotonic() < deadline, "the child tree did not come up"
            time.sleep(0.05)
        before = _threads(server.proc.pid)
        assert set(before.values()) == {os.getpriority(os.PRIO_PROCESS, 0)}
        changed = server.lower_priority(19)
        after = _threads(server.proc.pid)
        assert changed == len(before) >= 3 and set(after.values()) == {19} and server.nice == 19
        group = Path(f"/proc/{server.proc.pid}/autogroup")
        if group.exists():  # kernels built with autogroup scheduling
            assert group.read_text().split()[-1] == "19"
            # ours is untouched; a process in init's default group reads an empty file (no autogroup of its own)
            ours = Path("/proc/self/autogroup").read_text().split()
            assert not ours or ours[-1] != "19"
    finally:
        server.stop(5)
