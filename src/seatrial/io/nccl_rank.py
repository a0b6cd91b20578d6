"""One rank of ``net.nccl``, as a Ray actor pinned to its node: it holds the rendezvous (rank 0), joins the
process group over the interface that carries its node's Ray address, and measures all-reduce and all-gather
across every rank with hw's collectives code (:func:`seatrial.hw.collectives.measure_op`: nccl-tests' buffers,
checks and bus-bandwidth factors). torch is imported here, on the node, never by ``seatrial io`` itself."""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Any

OPS = ("all_reduce", "all_gather")
STORE_TIMEOUT_S = 300.0


def interface_of(address: str) -> str | None:
    """The network interface that holds ``address`` (None where none does)."""
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family in (socket.AF_INET, socket.AF_INET6) and a.address.split("%")[0] == address for a in addrs):
            return name
    return None


class NcclRank:
    """A Ray actor: ``node_address`` is its node's Ray address (the interface NCCL and gloo bind to)."""

    def __init__(self, node_address: str) -> None:
        self.address = node_address
        self.store: Any = None

    def open_store(self) -> int:
        """Rank 0: the rendezvous (torch.distributed's TCPStore) on a port the kernel gives; its port."""
        import torch.distributed as dist

        self.store = dist.TCPStore(self.address, 0, None, True, timedelta(seconds=STORE_TIMEOUT_S),
                                   wait_for_workers=False)  # fmt: skip
        return int(self.store.port)

    def measure(self, rank: int, world: int, store_at: tuple[str, int], backend: str, sizes: list[int],
                repeats: int) -> list[dict[str, Any]]:  # fmt: skip
        """Every op at every size over all ``world`` ranks, ``repeats`` times (each row names its repeat);
        rank 0 returns the rows (the slowest rank's time, any rank's wrong result), the others []."""
        import torch
        import torch.distributed as dist

        from seatrial.childenv import SAFE_NCCL_ENV
        from seatrial.hw.collectives import measure_op

        os.environ.update(SAFE_NCCL_ENV)
        iface = interface_of(self.address)
        if iface:  # bootstrap and traffic on the interface that carries the node's Ray address, unless set
            for key in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
                os.environ.setdefault(key, iface)
        device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        store = self.store or dist.TCPStore(store_at[0], store_at[1], None, False, timedelta(seconds=STORE_TIMEOUT_S))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                                device_id=device if device.type == "cuda" else None)  # fmt: skip
        try:
            rows = [{**measure_op(op, size, device, None, world, rank), "repeat": k}
                    for k in range(repeats) for size in sizes for op in OPS]  # fmt: skip
        finally:
            dist.destroy_process_group()
        return rows if rank == 0 else []
