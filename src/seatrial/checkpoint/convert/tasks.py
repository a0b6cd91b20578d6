"""The data each output file is made of, streamed in row blocks of at most ``chunk_bytes`` source bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from seatrial.checkpoint.convert.fidelity import ShardFidelity, accumulate
from seatrial.checkpoint.convert.kernels import Measure
from seatrial.checkpoint.convert.manifest import LmHeadRecord, TableRecord
from seatrial.checkpoint.convert.scale import (
    Quantized,
    dequant_lut,
    fp8_lut,
    pattern_values,
    restore_bf16,
    start_quantize,
    to_float32,
)
from seatrial.checkpoint.convert.source import SourceCheckpoint, SourceTensor
from seatrial.checkpoint.convert.stio import (
    ITEMSIZE_BYTES,
    HashingWriter,
    TensorEntry,
    iter_row_blocks,
    map_rows,
    read_rows,
)
from seatrial.errors import CheckpointError

Advance = Callable[[int], None]


class TableWriter:
    """Quantizes a table's shards into an open output, measuring fidelity on every ``row_stride``-th row."""

    def __init__(self, record: TableRecord, row_stride: int, chunk_bytes: int) -> None:
        self.record = record
        self.chunk_bytes = chunk_bytes
        wide = record.source_dtype == "F32"  # no lookup table: quantized and measured in float32
        self.lut = None if wide else fp8_lut(record.source_dtype, record.scale)
        values = np.empty(0, np.float32) if wide else pattern_values(record.source_dtype)
        self.measure = Measure(values, dequant_lut(record.scale), 0, row_stride)
        self._codes = [np.empty(0, dtype=np.uint8) for _ in range(3)]
        self._turn = 0

    def _codes_buffer(self, elements: int) -> np.ndarray:
        """The next of three reused code buffers: one filling, one being checked, one in flight to disk."""
        self._turn = (self._turn + 1) % len(self._codes)
        if self._codes[self._turn].size < elements:
            self._codes[self._turn] = np.empty(elements, dtype=np.uint8)
        return self._codes[self._turn]

    def write_shard(
        self, root: Path, shard: SourceTensor, stats: ShardFidelity, out: HashingWriter, advance: Advance
    ) -> None:
        """Quantize and measure block k+1 on the lookup threads while block k is checked and written."""
        entry = shard.entry
        blocks = iter_row_blocks(entry, self.chunk_bytes)
        elements = (blocks[0][1] - blocks[0][0]) * entry.row_bytes // ITEMSIZE_BYTES[entry.dtype]
        with (root / shard.file).open("rb") as fh:
            pending: _Block | None = None
            for start, stop in blocks:
                raw = map_rows(fh, entry, start, stop)
                codes = start_quantize(
                    raw, entry.dtype, self.record.scale, self.lut, self._codes_buffer(elements),
                    self.measure.at(start),
                )  # fmt: skip
                if pending is not None:
                    self._finish(root / shard.file, entry, pending, stats, out, advance)
                pending = _Block(start, stop, raw, codes)
            if pending is not None:
                self._finish(root / shard.file, entry, pending, stats, out, advance)

    def _finish(
        self, path: Path, entry: TensorEntry, block: _Block, stats: ShardFidelity, out: HashingWriter,
        advance: Advance,
    ) -> None:  # fmt: skip
        codes, finite, sums = block.codes()
        if not finite:
            raise CheckpointError(path, f"{entry.name}: non-finite value in rows {block.start}-{block.stop}")
        out.write_async(codes)
        if sums is not None:
            accumulate(stats, sums)
        advance(block.raw.nbytes)


class _Block(NamedTuple):
    """A row block whose codes are being computed: ``codes()`` waits for them."""

    start: int
    stop: int
    raw: np.ndarray
    codes: Quantized


def copy_tensor(
    fh: BinaryIO, entry: TensorEntry, out: HashingWriter, chunk_bytes: int, advance: Advance
) -> None:
    """Copy a tensor's bytes unchanged."""
    fh.seek(entry.begin)
    left = entry.nbytes
    while left:
        block = fh.read(min(chunk_bytes, left))
        if not block:
            raise CheckpointError(getattr(fh, "name", "?"), f"short read in tensor {entry.name!r}")
        out.write(block)
        left -= len(block)
        advance(len(block))


def restore_lm_head(
    root: Path, weight: SourceTensor, scale: SourceTensor, record: LmHeadRecord, out: HashingWriter,
    chunk_bytes: int, advance: Advance,
) -> None:  # fmt: skip
    """Write BF16 ``fp8 * scale`` row block by row block; count elements BF16 cannot hold exactly."""
    entry = weight.entry
    with (root / scale.file).open("rb") as sfh:
        scale_raw = read_rows(sfh, scale.entry, 0, scale.entry.rows)
    scales = to_float32(scale_raw, scale.entry.dtype).reshape(-1, 1)
    record.elements = record.inexact_elements = 0
    record.max_abs_rounding_error = 0.0
    with (root / weight.file).open("rb") as fh:
        for start, stop in iter_row_blocks(entry, chunk_bytes):
            codes = read_rows(fh, entry, start, stop)
            row_scale = scales[start:stop] if scales.shape[0] > 1 else scales[:1]
            bf16 = restore_bf16(codes, row_scale)
            exact = to_float32(codes, "F8_E4M3") * row_scale
            error = np.abs(to_float32(bf16, "BF16") - exact)
            record.elements += int(codes.size)
            record.inexact_elements += int((error > 0).sum())
            record.max_abs_rounding_error = max(record.max_abs_rounding_error, float(error.max(initial=0.0)))
            out.write(bf16)
            advance(codes.nbytes)


LmHeadParts = tuple[SourceTensor, SourceTensor, LmHeadRecord]


def rewrite_file(
    source: SourceCheckpoint, fname: str, kept: list[str], lm_head: LmHeadParts | None,
    out: HashingWriter, chunk_bytes: int, advance: Advance,
) -> None:  # fmt: skip
    """Stream a source file's kept tensors in order, the FP8 lm_head (if here) restored to BF16."""
    entries = source.files[fname]
    with (source.root / fname).open("rb") as fh:
        for name in kept:
            if lm_head is not None and name == lm_head[0].entry.name:
                restore_lm_head(source.root, lm_head[0], lm_head[1], lm_head[2], out, chunk_bytes, advance)
            else:
                copy_tensor(fh, entries[name], out, chunk_bytes, advance)
