"""Checkpoint inspection from safetensors headers: reader, index, roles, formats, audit.

Public API: ``audit(dir) -> AuditReport``, ``scan(dir) -> Inventory`` (tensor groups for
planners), ``read_header(path) -> ShardHeader``, ``post_conversion_bytes(report)``.
"""

from seatrial.checkpoint.audit import audit, summarize
from seatrial.checkpoint.conversion import ConversionEstimate, post_conversion_bytes
from seatrial.checkpoint.header import ShardHeader, TensorEntry, read_header
from seatrial.checkpoint.inventory import Inventory, TensorGroup, scan, text_config
from seatrial.checkpoint.report import AuditReport, Component, Finding

__all__ = [
    "AuditReport",
    "Component",
    "ConversionEstimate",
    "Finding",
    "Inventory",
    "ShardHeader",
    "TensorEntry",
    "TensorGroup",
    "audit",
    "post_conversion_bytes",
    "read_header",
    "scan",
    "summarize",
    "text_config",
]
