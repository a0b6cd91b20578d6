"""Checkpoint inspection from safetensors headers: reader, index, roles, formats, audit.

Public API: ``audit(dir) -> AuditReport``, ``scan(dir) -> Inventory`` (tensor groups for
planners), ``read_header(path) -> ShardHeader``, ``post_conversion_bytes(report)``.
Names load on first use, so ``seatrial convert`` does not pay for the audit's imports.
No submodule may share a public name here (importing it would rebind the package attribute).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seatrial.lazy import lazy_names

_WHERE = {
    "audit": "summary",
    "summarize": "summary",
    "ConversionEstimate": "conversion",
    "post_conversion_bytes": "conversion",
    "ShardHeader": "header",
    "TensorEntry": "header",
    "read_header": "header",
    "Inventory": "inventory",
    "TensorGroup": "inventory",
    "scan": "inventory",
    "text_config": "inventory",
    "AuditReport": "report",
    "Component": "report",
    "Finding": "report",
}

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

if TYPE_CHECKING:
    from seatrial.checkpoint.conversion import ConversionEstimate, post_conversion_bytes
    from seatrial.checkpoint.header import ShardHeader, TensorEntry, read_header
    from seatrial.checkpoint.inventory import Inventory, TensorGroup, scan, text_config
    from seatrial.checkpoint.report import AuditReport, Component, Finding
    from seatrial.checkpoint.summary import audit, summarize


__getattr__ = lazy_names(__name__, _WHERE)
