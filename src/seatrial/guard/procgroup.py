"""The guarded command as its own process group (and session), killed as a whole.

Why signalling the group can never hit a stranger: the leader is our child and is not reaped until the
group has been killed, so its pid (which is the group id) stays allocated and cannot be reused; a
process can only join a group of its own session, and the session is the leader's. The leader's start
time is still checked before every signal, and a mismatch refuses to signal.

``oom_score_adj`` is set by a tiny ``sh`` wrapper before it ``exec``s the command, so the command and
every descendant inherit it from their first instruction (no window, no ``preexec_fn`` in a threaded
parent). Exit status 121 from the wrapper means the value could not be written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from typing import Any

from seatrial.childenv import child_environ
from seatrial.errors import ConfigError, GuardError
from seatrial.guard.procfs import describe_member, group_members, read_stat

OOM_SET_FAILED_EXIT = 121
_WRAPPER = (
    'printf "%s\\n" "$0" > /proc/self/oom_score_adj 2>/dev/null || '
    '{ echo "seatrial guard: cannot set oom_score_adj $0" >&2; exit 121; }; exec "$@"'
)


def decode_wait_status(status: int) -> int:
    """Shell convention: the exit code, or 128 + signal number for a process killed by a signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class ProcessGroupTarget:
    """Launches ``argv`` in a new session; ``pgid == sid == leader pid``."""

    kind = "process_group"
    owned = True

    def __init__(self, argv: list[str], oom_score_adj: int) -> None:
        if not argv:
            raise ConfigError("guard: no command given after --")
        if shutil.which(argv[0]) is None:
            raise ConfigError(f"guard: command {argv[0]!r} not found on PATH")
        self.argv = list(argv)
        self.oom_score_adj = oom_score_adj
        self.pid: int | None = None
        self.start_ticks: int | None = None
        self.launches = 0
        self._signalled_at = 0.0

    def start(self) -> dict[str, Any]:
        sh = shutil.which("sh") or "/bin/sh"
        wrapper = [sh, "-c", _WRAPPER, str(self.oom_score_adj), *self.argv]
        self.pid = os.posix_spawn(sh, wrapper, child_environ(), setsid=True)
        stat = read_stat(self.pid)
        if stat is None:  # cannot happen before we reap it, but never signal an unknown identity
            raise GuardError(f"guard: launched pid {self.pid} has no /proc entry")
        self.start_ticks = stat.start_ticks
        self.launches += 1
        return self.describe()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "pid": self.pid,
            "pgid": self.pid,
            "start_ticks": self.start_ticks,
            "command": self.argv,
            "oom_score_adj": self.oom_score_adj,
            "launch": self.launches,
        }

    def exit_code(self) -> int | None:
        """The leader's exit code if it has exited, without reaping it (so its pid stays ours)."""
        if self.pid is None:
            return None
        info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None or info.si_pid == 0:
            return None
        if info.si_code == os.CLD_EXITED:
            return info.si_status
        return 128 + info.si_status

    def _check_identity(self) -> None:
        assert self.pid is not None
        stat = read_stat(self.pid)
        if stat is None or stat.start_ticks != self.start_ticks:
            raise GuardError(
                f"guard: pid {self.pid} no longer belongs to the guarded command (pid reused); not signalling"
            )

    def _signal(self, sig: signal.Signals) -> None:
        assert self.pid is not None
        self._check_identity()
        with contextlib.suppress(ProcessLookupError):  # the last member exited on its own in between
            os.killpg(self.pid, sig)

    def _wait_gone(self, timeout_s: float, resend: signal.Signals | None = None) -> bool:
        """Wait until the group has no live member; ``resend`` re-signals stragglers (a fork that raced
        the first signal) on every check."""
        assert self.pid is not None
        deadline = time.monotonic() + timeout_s
        while group_members(self.pid):
            if time.monotonic() >= deadline:
                return False
            if resend is not None:
                self._signal(resend)
            time.sleep(0.01)
        return True

    def kill(self, graceful_s: float = 0.0, timeout_s: float = 10.0) -> dict[str, Any]:
        """Stop the whole group, wait until no member is left, then reap the leader.

        At once (``graceful_s == 0``): SIGSTOP freezes every member first, so allocation stops that
        instant, the members are listed for the history, then SIGKILL. Gracefully: SIGTERM, then
        SIGKILL after ``graceful_s``. Returns the evidence for the history line."""
        if self.pid is None:
            return {"members": [], "exit_code": None}
        self._signalled_at = time.time()
        if graceful_s <= 0:
            self._signal(signal.SIGSTOP)
        members = [describe_member(m) for m in group_members(self.pid)]
        if graceful_s > 0 and members:
            self._signal(signal.SIGTERM)
            if self._wait_gone(graceful_s):
                return self._reaped(members, signal_name="SIGTERM")
        if members:
            self._signal(signal.SIGKILL)
        if not self._wait_gone(timeout_s, resend=signal.SIGKILL):
            raise GuardError(f"guard: process group {self.pid} still alive {timeout_s:.0f} s after SIGKILL")
        return self._reaped(members, signal_name="SIGKILL" if members else None)

    def _reaped(self, members: list[dict[str, Any]], signal_name: str | None) -> dict[str, Any]:
        assert self.pid is not None
        gone_at = time.time()
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        return {
            "members": members,
            "signal": signal_name,
            "signalled_at_unix_s": round(self._signalled_at, 3) if signal_name else None,
            "gone_at_unix_s": round(gone_at, 3),
            "exit_code": decode_wait_status(status),
        }
