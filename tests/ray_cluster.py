"""A real local Ray cluster for tests: two nodes on this machine (a head offering ``seatrial_gpu``, and a
client node offering the ``seatrial_client`` resource), on the loopback address only, shut down by the tests themselves (by
its handle, then any process of its own that is left, by pid)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def need_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("SEATRIAL_REQUIRE_ENGINE") == "1":
            pytest.fail("ray is not installed (the dev extra installs it)")
        pytest.skip("ray is not installed (pip install 'seatrial[ray]')")


def descendants(pids: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, stack = list(pids), list(pids)
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


@dataclass
class RayCluster:
    address: str
    cluster: Any
    client_node: Any
    tmp: str

    def pids(self) -> list[int]:
        nodes = [self.cluster.head_node, *self.cluster.worker_nodes]
        roots = [p.process.pid for n in nodes for procs in n.all_processes.values() for p in procs]
        return descendants(roots)

    def listening_addresses(self) -> list[str]:
        """Local addresses of the TCP sockets Ray's processes listen on."""
        inodes = set()
        for pid in self.pids():
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
            except OSError:
                continue
        out = []
        for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
            for line in Path(table).read_text().splitlines()[1:]:
                f = line.split()
                if f[3] == "0A" and f[9] in inodes:  # LISTEN
                    out.append(_addr(f[1], v6))
        return out

    def stop(self) -> None:
        import ray

        pids = self.pids()
        ray.shutdown()
        self.cluster.shutdown()
        for pid in pids:
            if os.path.exists(f"/proc/{pid}"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _addr(hexaddr: str, v6: bool) -> str:
    host, port = hexaddr.split(":")
    raw = bytes.fromhex(host)
    if not v6:
        return ".".join(str(b) for b in raw[::-1]) + f":{int(port, 16)}"
    words = [raw[i : i + 4][::-1].hex() for i in range(0, 16, 4)]
    full = "".join(words)
    if full.startswith("0" * 20 + "ffff"):
        v4 = bytes.fromhex(full[24:])
        return ".".join(str(b) for b in v4) + f":{int(port, 16)}"
    return f"[{full}]:{int(port, 16)}"


def start_cluster() -> RayCluster:
    need_ray()
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when ray is first imported
    tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's socket paths must stay short
    os.environ["RAY_TMPDIR"] = tmp
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from ray.cluster_utils import Cluster

    # the head offers seatrial_gpu (bench's GPU telemetry reaches it through an actor; it has no NVML here)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"seatrial_gpu": 1}})
    client = cluster.add_node(num_cpus=1, resources={"seatrial_client": 2})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    return RayCluster(cluster.address, cluster, client, tmp)
