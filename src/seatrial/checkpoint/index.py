"""The files of a checkpoint directory: its index, its shards and its JSON configs.

``model.safetensors.index.json`` holds ``weight_map`` (tensor name -> shard file) and
``metadata.total_size`` (the sum of tensor bytes the exporter recorded).
Without an index, every ``*.safetensors`` file in the directory is a shard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from seatrial.checkpoint import native
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import CheckpointError

INDEX_NAME = "model.safetensors.index.json"


class CheckpointFiles(NamedTuple):
    """``shards`` are (name as written, real path); ``index_prints`` is :func:`index_fingerprints` of
    the index's ``weight_map`` (empty without an index; :func:`read_weight_map` reads the map itself,
    which only a mismatch needs)."""

    root: Path
    shards: list[tuple[str, Path]]
    index_total_size: int | None
    config: dict[str, Any]
    hf_quant_config: dict[str, Any]
    index_prints: dict[str, tuple[int, int]]


#: What :func:`index_digest` gives: ``metadata.total_size`` and the per-file fingerprints.
IndexDigest = tuple[int | None, dict[str, tuple[int, int]]]


def read_json_file(path: Path) -> Any:
    """Parse a JSON file, turning every failure into CheckpointError naming it."""
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise CheckpointError(path, f"cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise CheckpointError(path, f"is not valid JSON ({exc.msg} at byte {exc.pos})") from None


def _optional_object(root: Path, name: str) -> dict[str, Any]:
    if not (root / name).exists():
        return {}
    path = resolve_inside(root, name)
    doc = read_json_file(path)
    if not isinstance(doc, dict):
        raise CheckpointError(path, "must hold a JSON object")
    return doc


def _read_index(root: Path) -> tuple[dict[str, str], int | None, dict[str, tuple[int, int]]]:
    path = resolve_inside(root, INDEX_NAME)
    doc = read_json_file(path)
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    prints = _checked_fingerprints(weight_map) if isinstance(weight_map, dict) else None
    if weight_map is None or prints is None:
        raise CheckpointError(path, "weight_map must map tensor names to file names")
    total = (doc.get("metadata") or {}).get("total_size")
    if total is not None and (type(total) is not int or total < 0):
        raise CheckpointError(path, f"metadata.total_size must be a non-negative integer, got {total!r}")
    return weight_map, total, prints


def _checked_fingerprints(weight_map: dict[str, Any]) -> dict[str, tuple[int, int]] | None:
    """:func:`index_fingerprints`, or None when a file name is not a string."""
    if native.COLUMNS is not None:
        return native.COLUMNS.fingerprints(weight_map)
    if not set(map(type, weight_map.values())) <= {str}:
        return None
    return index_fingerprints(weight_map)


def index_digest(root: Path) -> IndexDigest:
    """The index's checked total and fingerprints: small enough to come back from a worker process
    (the map itself, hundreds of thousands of names, stays there)."""
    _, total, prints = _read_index(root)
    return total, prints


def read_weight_map(root: Path) -> dict[str, str]:
    """The index's ``weight_map`` (checked), or {} without an index."""
    return _read_index(root)[0] if (root / INDEX_NAME).exists() else {}


def list_files(root: Path, index: IndexDigest | None = None) -> CheckpointFiles:
    """Discover a checkpoint's shards and configs without opening any tensor data (``index``: the
    index's :func:`index_digest` when it was already read)."""
    if not root.is_dir():
        raise CheckpointError(root, "is not a directory")
    total: int | None = None
    prints: dict[str, tuple[int, int]] = {}
    if (root / INDEX_NAME).exists():
        total, prints = index if index is not None else index_digest(root)
        names = sorted(prints)
        referrer = root / INDEX_NAME
    else:
        names = sorted(p.name for p in root.glob("*.safetensors"))
        referrer = None
    if not names:
        raise CheckpointError(root, "holds no *.safetensors files")
    shards = [(name, resolve_inside(root, name, referrer=referrer)) for name in names]
    for name, path in shards:
        if not path.is_file():
            raise CheckpointError(root / name, "is named by the index but does not exist")
    config = _optional_object(root, "config.json")
    return CheckpointFiles(
        root, shards, total, config, _optional_object(root, "hf_quant_config.json"), prints
    )


def index_fingerprints(weight_map: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Per file the index names: (tensor count, ``names_hash`` of those tensor names).

    Equal to a shard digest's (tensors, name_hash) exactly when the index lists that shard's
    tensors, up to a 64-bit hash collision. (The compiled ``_columns.fingerprints`` gives the same.)
    """
    if not weight_map:
        return {}
    files = list(weight_map.values())
    ids_of = {f: i for i, f in enumerate(dict.fromkeys(files))}
    ids = np.fromiter(map(ids_of.__getitem__, files), dtype=np.int64, count=len(files))
    hashes = np.fromiter(map(hash, weight_map), dtype=np.int64, count=len(files))
    order = np.argsort(ids, kind="stable")
    counts = np.bincount(ids, minlength=len(ids_of))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    sums = np.add.reduceat(hashes[order], starts)
    return {f: (int(counts[i]), int(sums[i])) for f, i in ids_of.items()}
