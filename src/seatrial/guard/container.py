"""A running container watched through the docker CLI (``--container NAME``).

The guard does not own the container's processes, so it uses the engine's verbs: ``docker kill
--signal KILL`` to stop it at once, ``docker stop --time N`` for a planned restart, ``docker start`` to
bring it back. Every command after the first names the container by the ID captured when the guard
started (a container recreated under the same name is another container and is never touched).
Exit is detected cheaply on every poll from ``/proc``: the container's init pid (from ``docker
inspect``) with its start time; ``docker inspect`` is called again only once that changes.
``oom_score_adj`` is written only to processes that are the container's: each pid ``docker top`` lists
is pinned by an open ``/proc/PID`` folder, must have started no earlier than the container's init, and,
where its cgroup names containers, must name this one; the value is written through the pinned folder,
so a pid that exited and was reused in between is never written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

from seatrial.errors import GuardError
from seatrial.guard.procfs import PROC, describe_member, parse_stat, read_stat

_DOCKER_TIMEOUT_S = 60.0


def inspect_cmd(name: str, fmt: str) -> list[str]:
    return ["docker", "inspect", "--format", fmt, name]


def kill_cmd(name: str) -> list[str]:
    return ["docker", "kill", "--signal", "KILL", name]


def stop_cmd(name: str, grace_s: float) -> list[str]:
    return ["docker", "stop", "--time", str(max(0, round(grace_s))), name]


def start_cmd(name: str) -> list[str]:
    return ["docker", "start", name]


def top_cmd(name: str) -> list[str]:
    return ["docker", "top", name, "-eo", "pid"]


def run_docker(argv: list[str]) -> str:
    """Run one docker CLI command; a clear :class:`GuardError` names the command when it fails."""
    if shutil.which(argv[0]) is None:
        raise GuardError("--container: the docker CLI is not on PATH")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_DOCKER_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        shown = " ".join(argv)
        raise GuardError(f"--container: `{shown}` did not answer in {_DOCKER_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        why = detail[-1] if detail else f"exit status {done.returncode}"
        raise GuardError(f"--container: `{' '.join(argv)}` failed: {why}")
    return done.stdout


class ContainerTarget:
    """A container by name, then by its ID; ``pid`` is the host pid of its init process."""

    kind = "container"
    owned = False

    def __init__(self, name: str, oom_score_adj: int) -> None:
        if not name.strip():
            raise GuardError("--container: empty container name")
        self.name = name
        self.id: str | None = None  # captured at the first start
        self.oom_score_adj = oom_score_adj
        self.pid: int | None = None
        self.start_ticks: int | None = None
        self.launches = 0
        self.oom_score_adj_set: list[int] = []

    @property
    def ref(self) -> str:
        """How docker commands name the container: its ID once known."""
        return self.id or self.name

    def start(self) -> dict[str, Any]:
        """First call: the container must already run (its ID is captured). Later calls: ``docker
        start`` that same container again."""
        if self.launches > 0:
            run_docker(start_cmd(self.ref))
        else:
            self.id = run_docker(inspect_cmd(self.name, "{{.Id}}")).strip() or None
        running, pid = run_docker(inspect_cmd(self.ref, "{{.State.Running}} {{.State.Pid}}")).split()
        if running != "true" or int(pid) <= 0:
            raise GuardError(f"--container: container {self.name!r} is not running; start it first")
        stat = read_stat(int(pid))
        if stat is None:
            raise GuardError(f"--container: pid {pid} of {self.name!r} is not visible in this pid namespace")
        self.pid, self.start_ticks = int(pid), stat.start_ticks
        self.oom_score_adj_set = self._set_oom_score_adj()
        self.launches += 1
        return self.describe()

    def _pids(self) -> list[int]:
        lines = run_docker(top_cmd(self.ref)).split()
        return [int(x) for x in lines if x.isdigit()]

    def _set_oom_score_adj(self) -> list[int]:
        done: list[int] = []
        for pid in self._pids():
            if self._write_oom_score_adj(pid):
                done.append(pid)
        return done

    def _write_oom_score_adj(self, pid: int) -> bool:
        """Write through an open ``/proc/PID`` folder after checking, through the same folder, that the
        process is the container's (see the module docstring). False when it is not, or is gone."""
        try:
            folder = os.open(PROC / str(pid), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            if not self._belongs(folder):
                return False
            fd = os.open("oom_score_adj", os.O_WRONLY, dir_fd=folder)
            try:
                os.write(fd, f"{self.oom_score_adj}\n".encode())
            finally:
                os.close(fd)
            return True
        except OSError:
            return False
        finally:
            os.close(folder)

    def _belongs(self, folder: int) -> bool:
        stat = parse_stat(0, _read_at(folder, "stat"))
        if stat is None or self.start_ticks is None or stat.start_ticks < self.start_ticks:
            return False
        cgroup = _read_at(folder, "cgroup").decode(errors="replace")
        names_containers = "docker" in cgroup or "containerd" in cgroup or "libpod" in cgroup
        return not (names_containers and self.id and self.id not in cgroup)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "container": self.name,
            "container_id": self.id,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "oom_score_adj": self.oom_score_adj,
            "oom_score_adj_pids": self.oom_score_adj_set,
            "launch": self.launches,
        }

    def exit_code(self) -> int | None:
        if self.pid is None:
            return None
        stat = read_stat(self.pid)
        if stat is not None and stat.start_ticks == self.start_ticks and stat.state != "Z":
            return None
        return int(run_docker(inspect_cmd(self.ref, "{{.State.ExitCode}}")).strip() or 0)

    def kill(self, graceful_s: float = 0.0, timeout_s: float = 10.0) -> dict[str, Any]:
        running = run_docker(inspect_cmd(self.ref, "{{.State.Running}}")).strip() == "true"
        if not running:  # it exited by itself: nothing left to stop
            code = int(run_docker(inspect_cmd(self.ref, "{{.State.ExitCode}}")).strip() or 0)
            self.pid = None
            return {"members": [], "signal": None, "exit_code": code}
        members = [describe_member(s) for p in self._pids() if (s := read_stat(p)) is not None]
        signalled_at = time.time()
        if graceful_s > 0:
            run_docker(stop_cmd(self.ref, graceful_s))
        else:
            run_docker(kill_cmd(self.ref))
        gone_at = time.time()
        code = int(run_docker(inspect_cmd(self.ref, "{{.State.ExitCode}}")).strip() or 0)
        self.pid = None
        verb = "docker stop" if graceful_s > 0 else "docker kill"
        return {
            "members": members,
            "signal": verb,
            "signalled_at_unix_s": round(signalled_at, 3),
            "gone_at_unix_s": round(gone_at, 3),
            "exit_code": code,
        }


def _read_at(folder: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY, dir_fd=folder)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)
