"""Every ``seatrial io`` trial, in run order: one entry each (the runner's module and function, imported when
the trial runs, and what it runs on). ``--trials``, the defaults and the summary's rows follow from it.

- ``node``: once per reachable node, ``runner(ctx, node) -> IoRow``; ``scratch``: it writes, so it needs the
  scratch folder made under ``--path`` on that node.
- ``fleet``: once for the run, ``runner(ctx, nodes) -> list[IoRow]`` (pairs of nodes, collectives)."""

from __future__ import annotations

from typing import Literal, NamedTuple


class IoTrial(NamedTuple):
    module: str  # under seatrial.io
    function: str
    scope: Literal["node", "fleet"]
    scratch: bool = False
    fleet_figure: str | None = None  # the figure the fleet-relative rule compares across nodes


IO_TRIALS: dict[str, IoTrial] = {
    "net.tcp": IoTrial("net", "tcp_trial", "fleet"),
    "net.nccl": IoTrial("nccl", "nccl_trial", "fleet"),
    "storage.read": IoTrial("storage", "read_trial", "node", scratch=True, fleet_figure="seq_read_gbps"),
    "storage.write": IoTrial("storage", "write_trial", "node", scratch=True, fleet_figure="seq_write_gbps"),
    "storage.load": IoTrial("storage", "load_trial", "node", fleet_figure="load_gbps"),
    "kv.disk": IoTrial("kvdisk", "disk_trial", "node", scratch=True, fleet_figure="read_gbps"),
    "kv.object": IoTrial("kvobject", "object_trial", "node"),
}
IO_TRIAL_NAMES = tuple(IO_TRIALS)
