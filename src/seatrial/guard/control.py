"""How ``seatrial guard restart`` reaches a running guard: a state file and a signal.

A running guard writes ``HISTORY.pid`` (its pid and start time). A planned restart writes its reason to
``HISTORY.restart`` and sends the guard ``SIGHUP``; the guard takes the request, restarts the server
without spending the budget, and records ``restart`` with ``planned: true``. The pid is checked against
its recorded start time before the signal is sent, so a stale file never signals a stranger.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import GuardError
from seatrial.guard.history import read_history
from seatrial.guard.procfs import read_stat
from seatrial.jsonio import read_json, write_json


def state_path(history: Path) -> Path:
    return history.with_name(history.name + ".pid")


def request_path(history: Path) -> Path:
    return history.with_name(history.name + ".restart")


def running_guard(history: Path) -> dict[str, Any] | None:
    """The state of the live guard using ``history``, or ``None`` (no file, or its process is gone)."""
    path = state_path(history)
    if not path.exists():
        return None
    try:
        state = read_json(path)
    except orjson.JSONDecodeError:
        return None
    stat = read_stat(int(state["guard_pid"]))
    if stat is None or stat.start_ticks != state["guard_start_ticks"]:
        return None
    return dict(state)


def claim(history: Path) -> Path:
    """Write this guard's state file; refuse when another live guard already uses the history."""
    other = running_guard(history)
    if other is not None and other["guard_pid"] != os.getpid():
        raise GuardError(f"--history {history}: guard pid {other['guard_pid']} is already using it")
    stat = read_stat(os.getpid())
    assert stat is not None
    state = {"guard_pid": os.getpid(), "guard_start_ticks": stat.start_ticks, "history": str(history)}
    return write_json(state_path(history), state)


def release(history: Path) -> None:
    state_path(history).unlink(missing_ok=True)
    request_path(history).unlink(missing_ok=True)


def take_request(history: Path) -> str:
    """The reason of a pending planned-restart request (removing it), or a default reason."""
    path = request_path(history)
    try:
        reason = str(read_json(path).get("reason") or "")
    except (FileNotFoundError, orjson.JSONDecodeError):
        reason = ""
    path.unlink(missing_ok=True)
    return reason or "planned restart (SIGHUP)"


def request_planned_restart(history: Path, reason: str, wait_s: float) -> dict[str, Any]:
    """Ask the guard using ``history`` for a planned restart; wait up to ``wait_s`` for its history line."""
    state = running_guard(history)
    if state is None:
        raise GuardError(f"--history {history}: no running guard uses this history")
    asked_at = time.time()
    write_json(request_path(history), {"reason": reason, "requested_at_unix_s": asked_at})
    os.kill(int(state["guard_pid"]), signal.SIGHUP)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for event in reversed(read_history(history)):
            if event["time_unix_s"] < asked_at - 0.01:
                break
            if event["event"] == "restart" and event.get("planned") is True:
                return event
        time.sleep(0.1)
    guard_pid = state["guard_pid"]
    raise GuardError(f"--history {history}: guard pid {guard_pid} did not restart within {wait_s:.0f} s")
