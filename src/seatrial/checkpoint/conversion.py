"""Seed 000's conversion arithmetic: the byte total after PLE -> FP8 and lm_head -> BF16.

    after = total - PLE bytes + PLE parameters x 1 byte (FP8 E4M3) + 2 (one BF16 global scale)
            + lm_head restore (parameters x 2 bytes - FP8 weight bytes - row-scale bytes)

Each step applies only when the checkpoint has that part in that form: a PLE wider than
8 bits, an lm_head stored as FP8 with a per-row scale.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from seatrial.checkpoint.findings import dominant
from seatrial.checkpoint.quant import precision
from seatrial.checkpoint.report import AuditReport

GIB = 1024**3
PLE_SCALE_BYTES = 2
"""One BF16 global scale shared by all PLE shards."""


class ConversionEstimate(BaseModel):
    """Bytes before and after; ``*_delta_bytes`` are signed changes."""

    model_config = ConfigDict(extra="forbid")

    source_total_bytes: int
    ple_delta_bytes: int
    lm_head_delta_bytes: int
    total_bytes: int

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB


def post_conversion_bytes(report: AuditReport) -> ConversionEstimate:
    """Apply seed 000's formula to an audit report."""
    ple_delta = 0
    ple = report.component("ple")
    if ple is not None and precision(dominant(ple)) in ("BF16", "F16", "F32"):
        ple_delta = -ple.bytes + ple.params + PLE_SCALE_BYTES
    head_delta = 0
    head = report.component("lm_head")
    if head is not None and dominant(head) == "FP8/channel":
        head_delta = head.params * 2 - head.bytes
    return ConversionEstimate(
        source_total_bytes=report.total_bytes,
        ple_delta_bytes=ple_delta,
        lm_head_delta_bytes=head_delta,
        total_bytes=report.total_bytes + ple_delta + head_delta,
    )
