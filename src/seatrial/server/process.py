"""A server command run in its own process group, its output in a log file (line by line, redacted:
``server.childlog``): started, waited for until it
serves, and stopped so that nothing of it is left.

Readiness: ``health_path`` answers 2xx and ``/v1/models`` lists a model (anything else, a garbled
status line too, is "not yet"). Stop: SIGTERM to the whole group, then wait until no member of the
group is left and the port no longer accepts connections; SIGKILL to the group after ``grace_s``; a
second Ctrl-C (or SIGTERM, SIGHUP) during the stop cannot cut it short. A command wrapped in ``seatrial
guard`` is stopped the same way: the guard stops the server it launched before it exits itself.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seatrial.childenv import child_environ
from seatrial.errors import EngineError
from seatrial.guard.procfs import group_members
from seatrial.interrupts import shielded
from seatrial.server.childlog import RedactedLog
from seatrial.server.engines import kv_log_lines

POLL_S = 0.5
LOG_DRAIN_S = 5.0  # at most this long for the child's last lines to reach its log once it has exited


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
QUIET_LOWEST = 20000  # the quiet ports: [20000, the ephemeral range's start)


def ephemeral_low() -> int:
    """The first port the kernel hands out for ``bind(0)`` and outbound connections (32768 where unknown)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(tries: int = 64) -> int:
    """A loopback port for a child to listen on, free now. Chosen at random below the kernel's ephemeral
    range, so that between this choice and the child's own bind no ``bind(0)`` and no outbound connection
    (of this process, its clients, or anything else on the host) can be handed it: a port taken from the
    ephemeral range was, and the child then failed with EADDRINUSE. Where that range starts too low to leave
    quiet ports, one the kernel hands out."""
    high = ephemeral_low() - 1
    rng = random.SystemRandom()
    for _ in range(tries if high > QUIET_LOWEST else 0):
        port = rng.randint(QUIET_LOWEST, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int) -> bool:
    """Whether something accepts connections on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""


def lower_priority(pid: int, nice: int) -> int:
    """Every thread of ``pid`` and of its descendants at ``nice`` (Linux keeps nice per thread; a thread
    started later inherits its parent thread's), and their session's autogroup too: with the kernel's
    autogroup scheduling (on by default) nice orders threads only within a session, and a server started in
    a session of its own competes with the client session against session. Returns the threads changed.
    Used once a server is ready: its start-up had the host to itself; its serving then yields a CPU to the
    client on the same host whenever the client needs one."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    changed = 0
    for proc in procs:
        with contextlib.suppress(OSError):
            Path(f"/proc/{proc.pid}/autogroup").write_text(str(nice))
        with contextlib.suppress(psutil.Error):
            for thread in proc.threads():
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, thread.id, nice)
                    changed += 1
    return changed


class ServerProcess:
    """``argv`` launched with ``env`` (merged over this process's environment) in a new session."""

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        *,
        host: str = "127.0.0.1",
        port: int,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv, self.log_path, self.host, self.port = list(argv), log_path, host, port
        self.url = f"http://{host}:{port}"
        environ = child_environ(env)
        self._log = RedactedLog(log_path, self.argv, environ)
        self.started_at = time.monotonic()
        self.stopped: dict[str, Any] | None = None  # how stop() went, once it has
        self.ready_s: float | None = None  # seconds from launch to ready, once it was
        self.nice: int | None = None  # the priority its threads were lowered to once ready, if asked
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environ,
                start_new_session=True,
            )
        except OSError as exc:
            self._log.drain(0)
            raise EngineError(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        assert self.proc.stdout is not None
        self._log.follow(self.proc.stdout)

    def wait_ready(self, timeout_s: float, health_path: str = "/health") -> float:
        """Seconds from launch until the server is healthy and lists a model; EngineError with the log's
        tail when it exits first or is not ready in time."""
        deadline = self.started_at + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.drain(LOG_DRAIN_S)  # its last words are what the error shows
                raise EngineError(
                    f"the server exited with {self.proc.returncode} during start-up:\n{self.log_tail()}"
                )
            if self._ready(health_path):
                self.ready_s = time.monotonic() - self.started_at
                return self.ready_s
            time.sleep(POLL_S)
        raise EngineError(f"the server was not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def lower_priority(self, nice: int) -> int:
        """The running server's threads at ``nice`` (see lower_priority); returns the thread count."""
        self.nice = nice
        return lower_priority(self.proc.pid, nice)

    def _ready(self, health_path: str) -> bool:
        try:
            status, _ = _get(f"{self.url}{health_path}")
            if not 200 <= status < 300:
                return False
            status, body = _get(f"{self.url}/v1/models")
            models = json.loads(body).get("data") if status == 200 else None
        except (OSError, ValueError, http.client.HTTPException):  # not serving yet, or not HTTP
            return False
        return bool(models)

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kv_cache_line(self) -> str | None:
        """The engine's start-up line stating its KV capacity (seatrial.server.engines; vLLM's "KV cache
        size: N tokens, Maximum concurrency ..."), from the log, if printed."""
        patterns = kv_log_lines()
        with contextlib.suppress(OSError):
            for line in self.log_path.read_text(errors="replace").splitlines():
                if any(p.search(line) for p in patterns):
                    return line.split("] ", 1)[-1]
        return None

    def stop(self, grace_s: float = 60.0) -> dict[str, Any]:
        """SIGTERM the group, SIGKILL it after ``grace_s``; returns how it went (``signal``, ``stop_s``,
        ``exit_code``). A second call returns the first one's answer."""
        if self.stopped is not None:
            return self.stopped
        started = time.monotonic()
        sent = None
        with shielded():
            if self.proc.poll() is None or group_members(self.proc.pid):
                sent = "SIGTERM"
                self._signal(signal.SIGTERM)
                if not self._gone(grace_s):
                    sent = "SIGKILL"
                    self._signal(signal.SIGKILL)
                    self._gone(30.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        self._log.drain(LOG_DRAIN_S)
        self.stopped = {
            "signal": sent,
            "stop_s": round(time.monotonic() - started, 3),
            "exit_code": self.proc.returncode,
        }
        return self.stopped

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _gone(self, timeout_s: float) -> bool:
        """Wait until the group has no member left and the port is free."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.proc.poll()  # reap the leader once it exits
            if not group_members(self.proc.pid) and not port_open(self.host, self.port):
                return True
            time.sleep(0.1)
        return False
