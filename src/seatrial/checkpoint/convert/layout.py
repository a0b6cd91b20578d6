"""The conversion layout: which files DST will hold and what goes in each, before anything is written."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from seatrial.checkpoint.convert.manifest import OutputRecord, TensorRecord
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.source import INDEX_NAME, SINGLE_NAME, SourceCheckpoint, SourceTensor, Table
from seatrial.checkpoint.convert.stio import OUTPUT_METADATA, TensorSpec, encode_header
from seatrial.errors import CheckpointError, ConfigError

CONFIG_NAME = "config.json"
REWRITTEN_SINGLE_NAME = "model-00001-of-00001.safetensors"
SizeOf = Callable[[list[int]], int]
_LM_HEAD_RE = re.compile(r"^(?:.*\.)?lm_head\.weight$")


@dataclass(frozen=True)
class LmHeadSource:
    """The FP8 lm_head weight, its scale, and the tensors that leave the index with the scale."""

    weight: SourceTensor
    scale: SourceTensor
    dropped: tuple[str, ...]

    @property
    def module(self) -> str:
        return self.weight.entry.name.removesuffix(".weight")


def find_lm_head(source: SourceCheckpoint) -> LmHeadSource:
    """The FP8 lm_head and its ``weight_scale`` (row-wise [V, 1] or per-tensor); clear error otherwise."""
    names = [n for n in source.tensors if _LM_HEAD_RE.match(n)]
    if len(names) != 1:
        raise CheckpointError(source.root, f"--lm-head-bf16: expected one lm_head.weight, found {names}")
    weight = source.tensors[names[0]]
    if weight.entry.dtype != "F8_E4M3" or len(weight.entry.shape) != 2:
        raise CheckpointError(
            source.root, f"--lm-head-bf16: {names[0]} is {weight.entry.dtype}, not 2-D FP8 E4M3"
        )
    module = names[0].removesuffix(".weight")
    scale = source.tensors.get(f"{module}.weight_scale")
    if scale is None:
        raise CheckpointError(source.root, f"--lm-head-bf16: {module}.weight_scale not found")
    rows = weight.entry.shape[0]
    if scale.entry.shape not in ((rows, 1), (rows,), (1,), ()) or scale.entry.dtype not in (
        "BF16",
        "F16",
        "F32",
    ):
        raise CheckpointError(
            source.root,
            f"--lm-head-bf16: scale {scale.entry.dtype} {list(scale.entry.shape)}"
            " is neither row-wise nor per-tensor",
        )
    dropped = tuple(n for n in (f"{module}.weight_scale", f"{module}.input_scale") if n in source.tensors)
    return LmHeadSource(weight, scale, dropped)


def group_shards(
    count: int, size_of: SizeOf, shards: int | None, max_file_bytes: int | None
) -> list[list[int]]:
    """Contiguous groups of shard indices, one group per output file.

    Default: one file per shard tensor. ``shards``: exactly that many files, near-equal counts.
    ``max_file_bytes`` alone: greedy packing, a file grows while ``size_of(group)`` stays in the bound.
    """
    if shards is not None:
        if shards > count:
            raise ConfigError(f"--shards {shards}: the table has only {count} shard tensors")
        base, extra = divmod(count, shards)
        starts = [i * base + min(i, extra) for i in range(shards + 1)]
        return [list(range(starts[i], starts[i + 1])) for i in range(shards)]
    if max_file_bytes is None:
        return [[i] for i in range(count)]
    groups: list[list[int]] = [[]]
    for i in range(count):
        if groups[-1] and size_of([*groups[-1], i]) > max_file_bytes:
            groups.append([])
        groups[-1].append(i)
    return groups


def file_bytes(tensors: list[TensorRecord]) -> int:
    """Size of a safetensors file holding ``tensors`` as the converter writes it."""
    specs = to_specs(tensors)
    return len(encode_header(specs, OUTPUT_METADATA)) + sum(s.nbytes for s in specs)


def to_specs(tensors: list[TensorRecord]) -> list[TensorSpec]:
    return [TensorSpec(t.name, t.dtype, tuple(t.shape)) for t in tensors]


def table_outputs(table: Table, scale_name: str, opts: ConvertOptions) -> list[OutputRecord]:
    """The FP8 shard files of ``table`` (``<table>-NNNNN-of-NNNNN.safetensors``) and its scale file."""
    records = [
        TensorRecord(name=s.entry.name, dtype="F8_E4M3", shape=list(s.entry.shape)) for s in table.shards
    ]
    groups = group_shards(
        len(records), lambda group: file_bytes([records[j] for j in group]), opts.shards, opts.max_file_bytes
    )
    stem = table.name.replace(".", "-")
    outputs = []
    for i, group in enumerate(groups):
        tensors = [records[j] for j in group]
        name = f"{stem}-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        size = file_bytes(tensors)
        if opts.max_file_bytes is not None and size > opts.max_file_bytes:
            raise ConfigError(f"--max-file-bytes {opts.max_file_bytes}: output {name} needs {size} bytes")
        outputs.append(OutputRecord(file=name, kind="table", table=table.name, tensors=tensors))
    scale = TensorRecord(name=scale_name, dtype="BF16", shape=[1])
    outputs.append(
        OutputRecord(file=f"{stem}-scale.safetensors", kind="scale", table=table.name, tensors=[scale])
    )
    return outputs


def source_outputs(
    source: SourceCheckpoint, converted: set[str], lm_head: LmHeadSource | None
) -> list[OutputRecord]:
    """Untouched files are linked; files holding converted or dropped tensors are rewritten without them."""
    dropped = set(lm_head.dropped) if lm_head else set()
    outputs = []
    for fname, entries in source.files.items():
        touched = [
            n
            for n in entries
            if n in converted or n in dropped or (lm_head and n == lm_head.weight.entry.name)
        ]
        if not touched:
            outputs.append(OutputRecord(file=fname, kind="link", source_file=fname))
            continue
        kept = []
        for name, entry in entries.items():
            if name in converted or name in dropped:
                continue
            dtype = "BF16" if lm_head and name == lm_head.weight.entry.name else entry.dtype
            kept.append(TensorRecord(name=name, dtype=dtype, shape=list(entry.shape)))
        if kept:
            # A lone model.safetensors would shadow the new index in transformers: rename it.
            out_name = REWRITTEN_SINGLE_NAME if fname == SINGLE_NAME else fname
            outputs.append(OutputRecord(file=out_name, kind="rewrite", source_file=fname, tensors=kept))
    for fname in source.other_files:
        if fname not in (CONFIG_NAME, INDEX_NAME):
            outputs.append(OutputRecord(file=fname, kind="link", source_file=fname))
    return outputs


def check_names(outputs: list[OutputRecord]) -> None:
    """No two outputs may share a file name, and no tensor may appear twice."""
    seen_files: set[str] = set()
    seen_tensors: set[str] = set()
    for record in outputs:
        if record.file in seen_files:
            raise ConfigError(f"output file name {record.file!r} would be written twice")
        seen_files.add(record.file)
        for tensor in record.tensors:
            if tensor.name in seen_tensors:
                raise ConfigError(f"tensor {tensor.name!r} would be written twice (check --scale-name)")
            seen_tensors.add(tensor.name)
