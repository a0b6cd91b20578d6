"""Stage 2, "Network / NVMe / Storage OK?": ``seatrial io``'s trials (net.tcp, net.nccl, storage.read,
storage.write, storage.load, kv.disk, kv.object) on local or SSH nodes, each ending in a verdict with its
figures and every repeat (see ``io/registry.py`` for the list, ``io/judge.py`` for the rule)."""

from seatrial.io.models import Expect, IoConfig, parse_expect
from seatrial.io.nodes import Node, parse_node
from seatrial.io.runner import run_io, summary_json

__all__ = ["Expect", "IoConfig", "Node", "parse_expect", "parse_node", "run_io", "summary_json"]
