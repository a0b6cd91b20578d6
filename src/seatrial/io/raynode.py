"""The nodes of a Ray cluster as ``seatrial io`` nodes (``--ray ADDRESS``): every alive node, each reached
through a :class:`NodeShell` actor pinned to it (node affinity, not soft) that runs the same programs an SSH
node runs (fio, iperf3, sh) with the same pid tracking, so the same stop ends them. The actor takes a few calls
at once: the stop's clean-up reaches a node whose fio is still running."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from seatrial.errors import ServerError
from seatrial.fleet.nodes import Ssh
from seatrial.io.nodes import Node

CALL_SLACK_S = 30.0  # beyond a program's own timeout, for the call to reach the node and come back


class NodeShell:
    """A Ray actor on one node: programs run to their end, or left running (a server) until waited or killed."""

    def __init__(self) -> None:
        self.running: dict[int, subprocess.Popen[bytes]] = {}

    def run(self, argv: list[str], timeout_s: float) -> tuple[int | None, bytes, bytes]:
        """(exit code, stdout, stderr); exit code None when it did not end within ``timeout_s`` (killed)."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return None, out, err
        except FileNotFoundError as exc:
            return 127, b"", str(exc).encode()
        return proc.returncode, out, err

    def spawn(self, argv: list[str]) -> int:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.running[proc.pid] = proc
        return proc.pid

    def wait(self, pid: int, timeout_s: float) -> int | None:
        try:
            return self.running[pid].wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self, pid: int) -> None:
        proc = self.running.pop(pid, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(5)


@dataclass
class RemoteProc:
    """A program left running on a Ray node, as :meth:`Node.popen` returns one (wait, kill)."""

    node: RayNode
    pid: int

    def wait(self, timeout: float | None = None) -> int:
        got = self.node.call("wait", self.pid, timeout or 0.0, timeout_s=(timeout or 0.0) + CALL_SLACK_S)
        if got is None:
            raise subprocess.TimeoutExpired(f"pid {self.pid} on {self.node.spec}", timeout or 0.0)
        return int(got)

    def kill(self) -> None:
        self.node.call("kill", self.pid, timeout_s=CALL_SLACK_S)


@dataclass
class RayNode(Node):
    """One alive node of the cluster: ``host`` is its Ray address (peers reach it there)."""

    node_id: str = ""
    actor: Any = None
    ray: Any = None

    @property
    def address(self) -> str:
        assert self.host is not None
        return self.host

    def call(self, method: str, *args: Any, timeout_s: float) -> Any:
        """The actor's ``method``; ServerError when the node does not answer in time or is gone."""
        try:
            return self.ray.get(getattr(self.actor, method).remote(*args), timeout=timeout_s)
        except self.ray.exceptions.GetTimeoutError:
            raise ServerError(f"{self.spec}: no answer from its Ray actor within {timeout_s:.0f} s") from None
        except self.ray.exceptions.RayError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ServerError(f"{self.spec}: the Ray node is gone ({first})") from None

    def _exec(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[bytes]:
        code, out, err = self.call("run", argv, timeout_s, timeout_s=timeout_s + CALL_SLACK_S)
        if code is None:
            raise ServerError(f"{self.spec}: {argv[0]} did not finish in {timeout_s:.0f} s")
        return subprocess.CompletedProcess(argv, code, out, err)

    def popen(self, argv: list[str]) -> RemoteProc:
        assert self.ctl is not None, "start() the node first"
        from seatrial.io.nodes import WRAP

        return RemoteProc(self, self.call("spawn", ["sh", "-c", WRAP, self.ctl, *argv], timeout_s=CALL_SLACK_S))

    def start(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.actor = self.ray.remote(NodeShell).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(self.node_id, soft=False), num_cpus=0,
            max_concurrency=4, max_restarts=0).remote()  # fmt: skip
        super().start()

    def stop(self) -> None:
        super().stop()
        if self.actor is not None:
            self.ray.kill(self.actor)
            self.actor = None


def ray_nodes(address: str, ssh: Ssh) -> list[RayNode]:
    """Every alive node of the cluster at ``address``, named ``NODEID[:12]@ADDRESS``."""
    from seatrial.raycluster import alive_nodes, connect_ray

    ray = connect_ray(address)
    return [RayNode(f"{n['NodeID'][:12]}@{n['NodeManagerAddress']}", n["NodeManagerAddress"], ssh,
                    node_id=n["NodeID"], ray=ray) for n in alive_nodes(address)]  # fmt: skip
