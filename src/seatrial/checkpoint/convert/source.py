"""The source checkpoint as the converter sees it: files, tensors, index, and the tables to convert.

A *table* is a family of tensors whose names match the embedding pattern and share a prefix:
``<prefix>.shard_<i>.weight`` for i = 0..n-1 (seed 000's PLE split into 128 shard tensors), or a single
``<prefix>.weight``. The shard set must be complete (contiguous numbering from 0), of one float dtype,
and of one row width.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from seatrial.checkpoint.convert.stio import TensorEntry, read_entries
from seatrial.checkpoint.index import read_json_file
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import CheckpointError, ConfigError

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


def _index(root: Path) -> tuple[dict[str, str], dict[str, object]]:
    """The index's weight_map (names only checked for type here) and metadata."""
    index_path = resolve_inside(root, INDEX_NAME)
    index = read_json_file(index_path)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise CheckpointError(index_path, "weight_map must map tensor names to file names")
    metadata = index.get("metadata") or {}
    return weight_map, dict(metadata) if isinstance(metadata, dict) else {}


def other_files(root: Path, known: set[str]) -> list[str]:
    """Every other file under ``root`` (config, tokenizer...), each resolved inside it: a symlink that
    leaves the checkpoint is refused, and so is a symlinked folder (it is never walked into)."""
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        for d in dirs:
            if (here / d).is_symlink():
                raise CheckpointError(here / d, "is a symlinked folder; copy the folder into the checkpoint")
        for name in names:
            rel = (here / name).relative_to(root).as_posix()
            if rel in known or rel == INDEX_NAME:
                continue
            if not resolve_inside(root, rel).is_file():
                continue
            found.append(rel)
    return sorted(found)


def open_source(root: Path) -> SourceCheckpoint:
    """Read the index (or the single ``model.safetensors``) and every referenced file's header. Every
    file name is resolved inside SRC by the resolver ``audit`` uses (``checkpoint.paths``)."""
    if not root.is_dir():
        raise CheckpointError(root, "source checkpoint directory does not exist")
    index_metadata: dict[str, object] = {}
    if (root / INDEX_NAME).exists():
        weight_map, index_metadata = _index(root)
        file_names = sorted(set(weight_map.values()))
        referrer: Path | None = root / INDEX_NAME
    elif (root / SINGLE_NAME).is_file():
        weight_map, file_names, referrer = {}, [SINGLE_NAME], None
    else:
        raise CheckpointError(root, f"neither {INDEX_NAME} nor {SINGLE_NAME} found")
    files: dict[str, dict[str, TensorEntry]] = {}
    tensors: dict[str, SourceTensor] = {}
    for name in file_names:
        path = resolve_inside(root, name, referrer=referrer)
        if not path.is_file():
            raise CheckpointError(root / name, f"listed in {INDEX_NAME} but missing")
        files[name], _ = read_entries(path)
        for tname, entry in files[name].items():
            tensors[tname] = SourceTensor(name, entry)
    for tname, fname in weight_map.items():
        if tensors.get(tname) is None or tensors[tname].file != fname:
            raise CheckpointError(root / fname, f"index names tensor {tname!r} but the file lacks it")
    return SourceCheckpoint(root, files, tensors, index_metadata, other_files(root, set(files)))


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
