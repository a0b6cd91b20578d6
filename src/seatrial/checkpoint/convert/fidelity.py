"""Round-trip fidelity of an FP8 table against its source, as in seed 000's fidelity table.

Definitions (``w`` = source value, ``d`` = dequantized FP8 value, both float32; per-row sums in float32
(the compiled kernel: eight float32 lanes per row, then float64); sums over rows in float64):
- ``snr_db = 10 log10(sum w^2 / sum (w - d)^2)`` over the measured rows.
- row cosine = ``<w, d> / (|w| |d|)`` per measured row; rows whose source is all zero are skipped;
  a nonzero row flushed entirely to zero has cosine 0.
- ``flushed_to_zero_share`` = share of measured elements that are nonzero in the source and 0 in FP8.
- ``precision_lost_bits`` per shard = ``log2(global scale / shard-local scale)``, the shard-local scale
  being the same rule applied to the shard's own max: the mantissa bits that shard gives up because
  the runtime accepts only one scale for all shards.
Measured rows are every ``row_stride``-th row (1 = all rows); the report says how many were measured.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from seatrial.checkpoint.convert.kernels import RowSums
from seatrial.checkpoint.convert.scale import fp8_scale


class ShardFidelity(BaseModel):
    """Sums over the measured rows of one shard tensor; merged into a table's report."""

    model_config = ConfigDict(extra="forbid")

    tensor: str
    max_abs: float
    local_scale: float
    precision_lost_bits: float
    rows_measured: int = 0
    rows_skipped_zero: int = 0
    elements_measured: int = 0
    flushed_elements: int = 0
    signal_sq_sum: float = 0.0
    noise_sq_sum: float = 0.0
    cosine_sum: float = 0.0
    cosine_min: float = 1.0


def shard_fidelity(tensor: str, max_abs: float, global_scale: float) -> ShardFidelity:
    """Start a shard's record with its scale-only figures (exact, from the scan pass)."""
    local = fp8_scale(max_abs) if max_abs > 0 else global_scale
    lost = math.log2(global_scale / local)
    return ShardFidelity(tensor=tensor, max_abs=max_abs, local_scale=local, precision_lost_bits=lost)


def accumulate(stats: ShardFidelity, sums: RowSums) -> None:
    """Add the sums over a block's measured rows to ``stats``."""
    stats.rows_measured += sums.rows_live
    stats.rows_skipped_zero += sums.rows_zero
    stats.elements_measured += sums.elements
    stats.flushed_elements += sums.flushed
    stats.signal_sq_sum += sums.signal_sq
    stats.noise_sq_sum += sums.noise_sq
    stats.cosine_sum += sums.cosine_sum
    stats.cosine_min = min(stats.cosine_min, sums.cosine_min)


class TableFidelity(BaseModel):
    """Seed 000's fidelity table for one converted table, plus the per-shard precision loss."""

    model_config = ConfigDict(extra="forbid")

    snr_db: float
    row_cosine_mean: float
    row_cosine_min: float
    flushed_to_zero_share: float
    rows_measured: int
    row_stride: int
    max_precision_lost_bits: float
    shards: list[ShardFidelity]


def table_fidelity(shards: list[ShardFidelity], row_stride: int) -> TableFidelity:
    """Merge per-shard sums into the table's figures."""
    signal = sum(s.signal_sq_sum for s in shards)
    noise = sum(s.noise_sq_sum for s in shards)
    rows = sum(s.rows_measured for s in shards)
    elements = sum(s.elements_measured for s in shards)
    snr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    return TableFidelity(
        snr_db=snr,
        row_cosine_mean=sum(s.cosine_sum for s in shards) / rows if rows else math.nan,
        row_cosine_min=min((s.cosine_min for s in shards if s.rows_measured), default=math.nan),
        flushed_to_zero_share=sum(s.flushed_elements for s in shards) / elements if elements else 0.0,
        rows_measured=rows,
        row_stride=row_stride,
        max_precision_lost_bits=max(s.precision_lost_bits for s in shards),
        shards=shards,
    )
