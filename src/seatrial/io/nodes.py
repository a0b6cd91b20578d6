"""Where ``seatrial io`` measures: ``local`` or ``[user@]host`` over SSH (``fleet.nodes.Ssh``: the same
host-key rules as sync and doctor). Every program it starts on a node (fio, iperf3) is started through
``sh`` that first appends its pid to the run's control folder on that node, so that a stop (Ctrl-C, a
timeout) ends exactly the processes this run started there, by pid, and removes its folders."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Protocol

from seatrial.errors import ConfigError, ServerError
from seatrial.fleet.nodes import SSH_UNREACHABLE, Ssh, check_host, ssh_failure

#: runs ARGV after appending the shell's pid (the program's, after exec) to CTL/pids
WRAP = 'echo $$ >> "$0/pids"; exec "$@"'
#: ends the run's processes on a node (those still running one of our programs) and removes its folders
CLEANUP = r"""ctl=$1; shift
ours() { case "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" in fio*|iperf3*|*/fio\ *|*/iperf3\ *) return 0;; esac; return 1; }
pids=""
for p in $(cat "$ctl/pids" 2>/dev/null); do  # with their children: fio's job processes, in sessions of their own
  ours "$p" && pids="$pids $p $(cat /proc/$p/task/*/children 2>/dev/null)"
done
for p in $pids; do ours "$p" && kill "$p" 2>/dev/null; done
sleep 0.2
for p in $pids; do ours "$p" && kill -9 "$p" 2>/dev/null; done
rm -rf -- "$ctl" "$@"
"""


class Running(Protocol):
    """A program left running on a node (iperf3's server): a local or ssh ``Popen``, or a Ray node's."""

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


@dataclass
class Node:
    """One node: ``spec`` as the user wrote it, ``host`` None for this machine."""

    spec: str
    host: str | None
    ssh: Ssh
    ctl: str | None = None  # the run's control folder there (pids), made by :meth:`start`
    scratch: list[str] = field(default_factory=list)  # folders to remove at the end
    _procs: set[subprocess.Popen[bytes]] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def address(self) -> str:
        """The address peers reach it at (iperf3's server)."""
        return "127.0.0.1" if self.host is None else self.host.rpartition("@")[2]

    def argv(self, argv: list[str]) -> list[str]:
        if self.host is None:
            return argv
        return [*self.ssh.argv(), "--", self.host, shlex.join(argv)]

    def run(
        self, argv: list[str], timeout_s: float = 600, tracked: bool = False
    ) -> subprocess.CompletedProcess[bytes]:
        """``argv`` there (``tracked``: a program the stop must be able to end); ServerError (exit 4) when ssh
        cannot reach the node."""
        if tracked:
            assert self.ctl is not None, "start() the node first"
            argv = ["sh", "-c", WRAP, self.ctl, *argv]
        return self._exec(argv, timeout_s)

    def _exec(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[bytes]:
        """``argv`` run there to its end (over ssh, or here)."""
        try:
            proc = subprocess.Popen(
                self.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
        except FileNotFoundError as exc:
            raise ServerError(f"{self.spec}: cannot run {argv[0]!r}: {exc.strerror}") from None
        with self._lock:
            self._procs.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise ServerError(f"{self.spec}: {argv[0]} did not finish in {timeout_s:.0f} s") from None
        finally:
            with self._lock:
                self._procs.discard(proc)
        if self.host is not None and proc.returncode in SSH_UNREACHABLE and not out:
            raise ServerError(ssh_failure(self.spec, err.decode(errors="replace").splitlines()))
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def popen(self, argv: list[str]) -> Running:
        """A tracked program left running (iperf3's server); :meth:`stop` ends it."""
        assert self.ctl is not None, "start() the node first"
        proc = subprocess.Popen(self.argv(["sh", "-c", WRAP, self.ctl, *argv]), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
        with self._lock:
            self._procs.add(proc)
        return proc

    def has(self, program: str) -> bool:
        return self.run(["sh", "-c", f"command -v {shlex.quote(program)}"]).returncode == 0

    def start(self) -> None:
        """The run's control folder on the node; ServerError when the node cannot be reached."""
        done = self.run(["sh", "-c", 'mktemp -d "${TMPDIR:-/tmp}/seatrial-io.XXXXXX"'], timeout_s=60)
        if done.returncode != 0:
            raise ServerError(f"{self.spec}: cannot make a control folder: {_last(done.stderr)}")
        self.ctl = done.stdout.decode().strip()

    def make_scratch(self, parent: str) -> str:
        """A new folder under ``parent`` that :meth:`stop` removes; ConfigError (exit 2) where it cannot
        be made (read-only, missing, not writable)."""
        script = 'mkdir -p -- "$1" 2>/dev/null; d=$(mktemp -d "$1/.seatrial-io.XXXXXX") || exit 3; echo "$d"'
        done = self.run(["sh", "-c", script, "sh", parent], timeout_s=60)
        if done.returncode != 0:
            raise ConfigError(
                f"{self.spec}: cannot write a scratch folder under {parent}: {_last(done.stderr)}"
            )
        path = done.stdout.decode().strip()
        self.scratch.append(path)
        return path

    def stop(self) -> None:
        """End every program this run started here (local ssh/fio clients, then the node's by pid) and remove
        the control and scratch folders. Safe to call twice."""
        if self.ctl is not None:  # first the node's programs by pid, with the processes they forked
            with contextlib.suppress(ServerError):
                self.run(["sh", "-c", CLEANUP, "sh", self.ctl, *self.scratch], timeout_s=60)
            self.ctl, self.scratch = None, []
        with self._lock:
            procs = list(self._procs)
        for proc in procs:  # then the local clients (ssh), each in a session of its own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)


def _last(err: bytes) -> str:
    lines = [x for x in err.decode(errors="replace").splitlines() if x.strip()]
    return lines[-1].strip() if lines else "no message"


def parse_node(spec: str, ssh: Ssh) -> Node:
    """``local`` (this machine) or ``[user@]host``; ConfigError for anything else."""
    text = spec.strip()
    if text in ("local", "localhost:local"):
        return Node(spec, None, ssh)
    if not text or ":" in text or "/" in text or " " in text:
        raise ConfigError(
            f"node {spec!r}: expected 'local' or [user@]host (paths go in --path / --checkpoint)"
        )
    check_host(text)
    return Node(spec, text, ssh)
