"""Write safetensors files the way the safetensors library lays them out.

Tensor data is never written: the file is truncated to its full size, so it is sparse
(all-zero data, no disk blocks) and a reader sees a real, complete file.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import orjson

BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
}


class Spec(NamedTuple):
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * BITS[self.dtype] // 8


def header_bytes(specs: Iterable[Spec], metadata: dict[str, str] | None = None) -> bytes:
    """The 8-byte length plus the JSON header, padded with spaces to a multiple of 8."""
    doc: dict[str, object] = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    for s in specs:
        doc[s.name] = {"dtype": s.dtype, "shape": list(s.shape), "data_offsets": [offset, offset + s.nbytes]}
        offset += s.nbytes
    raw = orjson.dumps(doc)
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def write_safetensors(path: Path, specs: list[Spec], metadata: dict[str, str] | None = None) -> int:
    """Write a full-size sparse safetensors file; return its tensor data bytes."""
    head = header_bytes(specs, metadata)
    data = sum(s.nbytes for s in specs)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(len(head) + data)
    return data


def write_sharded(root: Path, shards: dict[str, list[Spec]], config: dict[str, object]) -> int:
    """Write shards, ``model.safetensors.index.json`` and ``config.json``; return total_size."""
    root.mkdir(parents=True, exist_ok=True)
    weight_map: dict[str, str] = {}
    total = 0
    for file, specs in shards.items():
        total += write_safetensors(root / file, specs)
        weight_map.update({s.name: file for s in specs})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (root / "model.safetensors.index.json").write_bytes(orjson.dumps(index, option=orjson.OPT_INDENT_2))
    (root / "config.json").write_bytes(orjson.dumps(config, option=orjson.OPT_INDENT_2))
    return total


def pack_shards(
    specs: list[Spec], target_bytes: int, prefix: str, count: int, start: int = 1
) -> dict[str, list[Spec]]:
    """Split ``specs`` in order into shards of about ``target_bytes`` named like HF's exporter."""
    shards: dict[str, list[Spec]] = {}
    current: list[Spec] = []
    size = 0
    number = start
    for s in specs:
        if current and size + s.nbytes > target_bytes:
            shards[f"{prefix}-{number:05d}-of-{count:05d}.safetensors"] = current
            number, current, size = number + 1, [], 0
        current.append(s)
        size += s.nbytes
    if current:
        shards[f"{prefix}-{number:05d}-of-{count:05d}.safetensors"] = current
    return shards
