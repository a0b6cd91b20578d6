"""The source checkpoint as the converter sees it: files, tensors, index, and the tables to convert.

A *table* is a family of tensors whose names match the embedding pattern and share a prefix:
``<prefix>.shard_<i>.weight`` for i = 0..n-1 (seed 000's PLE split into 128 shard tensors), or a single
``<prefix>.weight``. The shard set must be complete (contiguous numbering from 0), of one float dtype,
and of one row width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from seatrial.checkpoint.convert.stio import TensorEntry, read_header
from seatrial.errors import CheckpointError, ConfigError
from seatrial.jsonio import read_json

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
#: Default ``--embedding-fp8`` pattern: the PLE n-gram embedding table (searched in tensor names).
DEFAULT_EMBEDDING_PATTERN = r"ngram_embedding\.(shard_\d+\.)?weight$"
_SHARD_RE = re.compile(r"^(?P<prefix>.+)\.shard_(?P<idx>\d+)\.weight$")
_CONVERTIBLE = ("BF16", "F16", "F32")


@dataclass(frozen=True)
class SourceTensor:
    """A tensor and the source file (relative name) that holds it."""

    file: str
    entry: TensorEntry


@dataclass
class Table:
    """A table to convert: its name (prefix), its shard tensors in order, and their common dtype."""

    name: str
    shards: list[SourceTensor]
    dtype: str

    @property
    def source_bytes(self) -> int:
        return sum(s.entry.nbytes for s in self.shards)


@dataclass
class SourceCheckpoint:
    """Parsed source directory. ``tensors`` maps each tensor name to where it lives."""

    root: Path
    files: dict[str, dict[str, TensorEntry]]
    tensors: dict[str, SourceTensor]
    index_metadata: dict[str, object] = field(default_factory=dict)
    other_files: list[str] = field(default_factory=list)

    @property
    def total_size_bytes(self) -> int:
        """Sum of tensor data bytes (the index's ``metadata.total_size`` convention)."""
        return sum(t.entry.nbytes for t in self.tensors.values())


def open_source(root: Path) -> SourceCheckpoint:
    """Read the index (or the single ``model.safetensors``) and every referenced file's header."""
    if not root.is_dir():
        raise CheckpointError(root, "source checkpoint directory does not exist")
    index_path = root / INDEX_NAME
    index_metadata: dict[str, object] = {}
    if index_path.is_file():
        index = read_json(index_path)
        weight_map: dict[str, str] = index.get("weight_map") or {}
        index_metadata = dict(index.get("metadata") or {})
        file_names = sorted(set(weight_map.values()))
    elif (root / SINGLE_NAME).is_file():
        weight_map, file_names = {}, [SINGLE_NAME]
    else:
        raise CheckpointError(root, f"neither {INDEX_NAME} nor {SINGLE_NAME} found")
    files: dict[str, dict[str, TensorEntry]] = {}
    tensors: dict[str, SourceTensor] = {}
    for name in file_names:
        path = root / name
        if not path.is_file():
            raise CheckpointError(path, f"listed in {INDEX_NAME} but missing")
        files[name], _ = read_header(path)
        for tname, entry in files[name].items():
            tensors[tname] = SourceTensor(name, entry)
    for tname, fname in weight_map.items():
        if tensors.get(tname) is None or tensors[tname].file != fname:
            raise CheckpointError(root / fname, f"index names tensor {tname!r} but the file lacks it")
    others = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and str(p.relative_to(root)) not in files and p.name != INDEX_NAME
    )
    return SourceCheckpoint(root, files, tensors, index_metadata, others)


def find_tables(source: SourceCheckpoint, pattern: str) -> list[Table]:
    """Group tensors matching ``pattern`` (regex, searched) into tables and verify each shard set."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"--embedding-fp8: {pattern!r} is not a valid regex: {exc}") from None
    groups: dict[str, dict[int, SourceTensor]] = {}
    for name in sorted(source.tensors):
        if not regex.search(name):
            continue
        match = _SHARD_RE.match(name)
        prefix, idx = (match["prefix"], int(match["idx"])) if match else (name.removesuffix(".weight"), -1)
        group = groups.setdefault(prefix, {})
        if idx in group:
            raise CheckpointError(source.root, f"table {prefix!r} has shard {idx} twice")
        group[idx] = source.tensors[name]
    if not groups:
        raise ConfigError(f"--embedding-fp8: pattern {pattern!r} matches no tensor in {source.root}")
    return [_verified_table(source.root, prefix, group) for prefix, group in sorted(groups.items())]


def _verified_table(root: Path, prefix: str, group: dict[int, SourceTensor]) -> Table:
    indices = sorted(group)
    if indices != [-1] and indices != list(range(len(indices))):
        missing = sorted(set(range(max(indices) + 1)) - set(indices))
        raise CheckpointError(
            root, f"table {prefix!r}: shard numbering not contiguous from 0 (missing {missing})"
        )
    shards = [group[i] for i in indices]
    dtypes = {s.entry.dtype for s in shards}
    if len(dtypes) != 1 or next(iter(dtypes)) not in _CONVERTIBLE:
        raise CheckpointError(root, f"table {prefix!r}: dtype {sorted(dtypes)} is not one of {_CONVERTIBLE}")
    widths = {s.entry.shape[1:] for s in shards}
    if len(widths) != 1 or any(len(s.entry.shape) != 2 for s in shards):
        raise CheckpointError(root, f"table {prefix!r}: shards must be 2-D with one row width, got {widths}")
    return Table(prefix, shards, dtypes.pop())
