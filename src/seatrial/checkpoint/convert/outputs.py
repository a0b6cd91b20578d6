"""Producing each output of the manifest, or skipping it on ``--resume`` when it already matches."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from seatrial.checkpoint.convert.atomic import link_or_copy, write_atomic
from seatrial.checkpoint.convert.fidelity import shard_fidelity
from seatrial.checkpoint.convert.layout import find_lm_head, to_specs
from seatrial.checkpoint.convert.manifest import Manifest, OutputRecord, TableRecord, save_manifest
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.scale import bf16_bits
from seatrial.checkpoint.convert.source import SourceCheckpoint
from seatrial.checkpoint.convert.stio import HashingWriter, file_digest, read_entries
from seatrial.checkpoint.convert.tasks import TableWriter, rewrite_file
from seatrial.checkpoint.paths import output_path, resolve_inside
from seatrial.errors import CheckpointError

_ORDER = {"link": 0, "table": 1, "scale": 2, "rewrite": 3}


class OutputRunner:
    """Runs outputs one at a time and records each in the manifest as soon as it is in place."""

    def __init__(
        self,
        source: SourceCheckpoint,
        opts: ConvertOptions,
        manifest: Manifest,
        advance: Callable[[int], None],
    ) -> None:
        self.source, self.opts, self.manifest, self.advance = source, opts, manifest, advance
        self.tables = {t.name: t for t in manifest.tables}
        self.counts = {"table": 0, "scale": 0, "rewrite": 0, "hardlink": 0, "copy": 0, "skipped": 0}
        self._writers: dict[str, TableWriter] = {}  # one per table: its lookup table and buffers are reused

    def ordered(self) -> Iterator[OutputRecord]:
        yield from sorted(self.manifest.outputs, key=lambda o: _ORDER[o.kind])

    def total_bytes(self) -> int:
        return sum(self._work_bytes(o) for o in self.manifest.outputs)

    def _work_bytes(self, record: OutputRecord) -> int:
        if record.kind == "link":
            return resolve_inside(self.source.root, record.source_file or record.file).stat().st_size
        if record.kind == "table":
            return sum(self.source.tensors[t.name].entry.nbytes for t in record.tensors)
        if record.kind == "rewrite":
            return sum(self.source.tensors[t.name].entry.nbytes for t in record.tensors)
        return 0

    def run(self, record: OutputRecord) -> None:
        final = output_path(self.opts.dst, record.file)
        if record.status == "done" and self._intact(record, final):
            self.counts["skipped"] += 1
            self.advance(self._work_bytes(record))
            return
        if record.kind == "link":
            source = resolve_inside(self.source.root, record.source_file or record.file)
            record.method = link_or_copy(source, final)  # type: ignore[assignment]
            record.size_bytes = final.stat().st_size
            self.counts[record.method or "copy"] += 1
            self.advance(record.size_bytes)
        else:
            final.parent.mkdir(parents=True, exist_ok=True)
            record.digest, record.size_bytes = write_atomic(
                final, to_specs(record.tensors), self._producer(record)
            )
            self.counts[record.kind] += 1
        record.status = "done"
        save_manifest(self.opts.dst, self.manifest)

    def _intact(self, record: OutputRecord, final: Path) -> bool:
        """A finished output is kept when dtype, shape, size and digest still match (links: same file)."""
        if not final.is_file():
            return False
        if record.kind == "link":
            source = resolve_inside(self.source.root, record.source_file or record.file)
            return os.path.samefile(source, final) or final.stat().st_size == source.stat().st_size
        try:
            entries, _ = read_entries(final)
        except CheckpointError:
            return False
        planned = [(t.name, t.dtype, tuple(t.shape)) for t in record.tensors]
        found = [(e.name, e.dtype, e.shape) for e in entries.values()]
        if planned != found or final.stat().st_size != record.size_bytes:
            return False
        return file_digest(final) == record.digest

    def _producer(self, record: OutputRecord) -> Callable[[HashingWriter], None]:
        if record.kind == "table":
            return lambda out: self._write_table(record, self.tables[record.table or ""], out)
        if record.kind == "scale":
            scale = np.array([self.tables[record.table or ""].scale], dtype=np.float32)
            return lambda out: out.write(bf16_bits(scale))
        return lambda out: self._write_rewrite(record, out)

    def _write_table(self, record: OutputRecord, table: TableRecord, out: HashingWriter) -> None:
        writer = self._writers.get(table.name)
        if writer is None:
            writer = TableWriter(table, self.opts.fidelity_row_stride, self.opts.chunk_bytes)
            self._writers[table.name] = writer
        record.fidelity = []
        for tensor in record.tensors:
            index = table.shard_tensors.index(tensor.name)
            stats = shard_fidelity(tensor.name, table.shard_max_abs[index], table.scale)
            writer.write_shard(self.source.root, self.source.tensors[tensor.name], stats, out, self.advance)
            record.fidelity.append(stats)

    def _write_rewrite(self, record: OutputRecord, out: HashingWriter) -> None:
        lm = None
        if self.manifest.lm_head is not None and any(
            t.name == self.manifest.lm_head.tensor for t in record.tensors
        ):
            head = find_lm_head(self.source)
            lm = (head.weight, head.scale, self.manifest.lm_head)
        kept = [t.name for t in record.tensors]
        rewrite_file(
            self.source, record.source_file or record.file, kept, lm, out, self.opts.chunk_bytes, self.advance
        )
