"""Steps 1-3 of seed 000's procedure: verify the shard sets, scan for the global max, build the manifest."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from seatrial.checkpoint.convert.layout import (
    CONFIG_NAME,
    LmHeadSource,
    check_names,
    find_lm_head,
    source_outputs,
    table_outputs,
)
from seatrial.checkpoint.convert.manifest import (
    LmHeadRecord,
    Manifest,
    OutputRecord,
    SourceFileRecord,
    TableRecord,
)
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.scale import POOL, fp8_scale, max_abs
from seatrial.checkpoint.convert.source import SourceCheckpoint, SourceTensor, Table, find_tables
from seatrial.checkpoint.convert.stio import ITEMSIZE_BYTES, iter_row_blocks, map_rows
from seatrial.checkpoint.index import read_json_file
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import CheckpointError, ConfigError

Advance = Callable[[int], None]


def scan_max_abs(root: Path, shard: SourceTensor, chunk_bytes: int, advance: Advance) -> float:
    """Largest magnitude of one shard tensor, streamed; a non-finite value is a clear error."""
    entry = shard.entry
    top = 0.0
    with (root / shard.file).open("rb") as fh:
        for start, stop in iter_row_blocks(entry, chunk_bytes):
            value = max_abs(map_rows(fh, entry, start, stop), entry.dtype)
            if math.isnan(value):
                raise CheckpointError(
                    root / shard.file, f"{entry.name}: non-finite value in rows {start}-{stop}"
                )
            top = max(top, value)
            advance(entry.row_bytes * (stop - start))
    return top


def table_record(
    source: SourceCheckpoint, table: Table, opts: ConvertOptions, advance: Advance
) -> TableRecord:
    """Scan ``table`` and fix its global max, scale and scale tensor name."""
    scans = [POOL.submit(scan_max_abs, source.root, s, opts.chunk_bytes, advance) for s in table.shards]
    shard_max = [scan.result() for scan in scans]  # shards in parallel: the scan is memory-bound
    global_max = max(shard_max)
    if global_max == 0:
        raise CheckpointError(source.root, f"table {table.name!r} is all zeros; no FP8 scale exists")
    try:
        scale_name = opts.scale_name.format(table=table.name)
    except (KeyError, IndexError, ValueError):
        raise ConfigError(f"--scale-name {opts.scale_name!r}: only {{table}} may be substituted") from None
    if scale_name in source.tensors:
        raise ConfigError(f"--scale-name: {scale_name!r} already exists in the source checkpoint")
    return TableRecord(
        name=table.name,
        source_dtype=table.dtype,
        shard_tensors=[s.entry.name for s in table.shards],
        source_bytes=table.source_bytes,
        output_bytes=table.source_bytes // ITEMSIZE_BYTES[table.dtype] + 2,
        scale_name=scale_name,
        global_max=global_max,
        scale=fp8_scale(global_max),
        shard_max_abs=shard_max,
    )


def select(source: SourceCheckpoint, opts: ConvertOptions) -> tuple[list[Table], LmHeadSource | None]:
    """The tables and lm_head this run converts; an error when there is nothing to do."""
    tables = find_tables(source, opts.embedding_pattern) if opts.embedding_pattern else []
    config = source.root / CONFIG_NAME
    declared = declared_split_parts(resolve_inside(source.root, CONFIG_NAME) if config.exists() else config)
    for table in tables:
        if declared is not None and len(table.shards) > 1 and len(table.shards) != declared:
            raise CheckpointError(
                source.root,
                f"table {table.name!r} has {len(table.shards)} shard tensors, config.json declares"
                f" split_ngram_parts={declared}",
            )
    lm_head = find_lm_head(source) if opts.lm_head_bf16 else None
    if not tables and lm_head is None and not opts.set_config:
        raise ConfigError("nothing to convert: --embedding-fp8 is off and --lm-head-bf16 was not given")
    return tables, lm_head


def declared_split_parts(config_path: Path) -> int | None:
    """``split_ngram_parts`` from config.json, searched at any depth (seed 000: 128); None if absent."""
    if not config_path.is_file():
        return None
    stack: list[object] = [read_json_file(config_path)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("split_ngram_parts"), int):
                return int(node["split_ngram_parts"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def lm_head_record(head: LmHeadSource) -> LmHeadRecord:
    entry = head.weight.entry
    return LmHeadRecord(
        tensor=entry.name,
        scale_tensor=head.scale.entry.name,
        scale_shape=list(head.scale.entry.shape),
        source_bytes=entry.nbytes,
        output_bytes=entry.nbytes * 2,
    )


def build_manifest(
    source: SourceCheckpoint,
    opts: ConvertOptions,
    tables: list[Table],
    lm_head: LmHeadSource | None,
    advance: Advance,
) -> Manifest:
    """Scan the tables, then lay out every output of DST (nothing written yet)."""
    records = [table_record(source, t, opts, advance) for t in tables]
    converted = {name for t in tables for name in (s.entry.name for s in t.shards)}
    outputs: list[OutputRecord] = source_outputs(source, converted, lm_head)
    for table, record in zip(tables, records, strict=True):
        outputs += table_outputs(table, record.scale_name, opts)
    check_names(outputs)
    return Manifest(
        src=str(source.root),
        options=opts.fingerprint(),
        source_files=source_files(source),
        total_size_before=source.total_size_bytes,
        total_size_after=size_after(source, outputs),
        tables=records,
        lm_head=lm_head_record(lm_head) if lm_head else None,
        outputs=outputs,
    )


def size_after(source: SourceCheckpoint, outputs: list[OutputRecord]) -> int:
    """Tensor bytes the new index will list (the index's ``total_size`` convention)."""
    total = 0
    for record in outputs:
        if record.kind == "link" and record.file in source.files:
            total += sum(e.nbytes for e in source.files[record.file].values())
        for tensor in record.tensors:
            count = math.prod(tensor.shape)
            total += count * ITEMSIZE_BYTES[tensor.dtype]
    return total


def source_files(source: SourceCheckpoint) -> dict[str, SourceFileRecord]:
    """Size and mtime of every source file, to tell on resume that the source has not changed."""
    names = [*source.files, *source.other_files]
    stats = {name: (source.root / name).stat() for name in names}
    return {
        n: SourceFileRecord(size_bytes=s.st_size, mtime_ns=s.st_mtime_ns) for n, s in sorted(stats.items())
    }
