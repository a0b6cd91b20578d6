"""Safe reader of one safetensors file's header; never reads tensor data.

Layout: an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8 JSON mapping
tensor names to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to
the data section that follows), and an optional ``__metadata__`` of strings.
Every malformed or hostile case raises CheckpointError naming the file.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from seatrial.checkpoint import native
from seatrial.checkpoint.dtypes import DTYPE_BITS
from seatrial.errors import CheckpointError

MAX_HEADER_BYTES = 100_000_000
"""The safetensors library's own limit on the JSON header."""


class TensorEntry(NamedTuple):
    """One tensor's header record: ``nbytes`` is ``end - begin`` of its data offsets, relative to the data
    section as the header states them; :meth:`in_file` places them in the file (absolute offsets, and
    the tensor's ``name``, as the converter reads rows by them)."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    name: str = ""

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def row_bytes(self) -> int:
        """Bytes of one row (the product of all but the first dimension, times the item size)."""
        return math.prod(self.shape[1:]) * DTYPE_BITS[self.dtype] // 8

    def in_file(self, name: str, data_start: int) -> TensorEntry:
        """This entry with absolute file offsets (``data_start`` = 8 + the header's length) and its name."""
        return self._replace(begin=data_start + self.begin, end=data_start + self.end, name=name)


@dataclass
class ShardHeader:
    """A parsed header as columns: ``data_bytes`` is the size of the data section the file holds.

    ``names``, ``dtypes``, ``shapes``, ``begins`` and ``ends`` are aligned, in header order.
    """

    path: Path
    header_bytes: int
    data_bytes: int
    names: list[str]
    dtypes: list[str]
    shapes: list[list[int]]
    begins: np.ndarray
    ends: np.ndarray
    metadata: dict[str, str]

    @property
    def nbytes(self) -> np.ndarray:
        return self.ends - self.begins

    @cached_property
    def tensors(self) -> dict[str, TensorEntry]:
        """The same header as a name -> TensorEntry mapping."""
        return {
            n: TensorEntry(d, tuple(s), int(b), int(e))
            for n, d, s, b, e in zip(
                self.names, self.dtypes, self.shapes, self.begins, self.ends, strict=True
            )
        }


def read_header(path: Path) -> ShardHeader:
    """Read and validate the header of the safetensors file at ``path``."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            if size < 8:
                raise CheckpointError(path, f"file is {size} bytes, too short for a safetensors header")
            (n,) = struct.unpack("<Q", fh.read(8))
            if n > size - 8:
                raise CheckpointError(path, f"header length {n} runs past the end of the file ({size} bytes)")
            if n > MAX_HEADER_BYTES:
                raise CheckpointError(path, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
            raw = fh.read(n)
    except OSError as exc:
        raise CheckpointError(path, f"cannot read: {exc.strerror or exc}") from None
    doc = _parse_json(path, raw)
    metadata = _metadata(path, doc.pop("__metadata__", None))
    data_bytes = size - 8 - n
    columns = _fast_columns(doc, data_bytes)
    if columns is None:
        columns = _slow_columns(path, doc, data_bytes)
    dtypes, shapes, begins, ends = columns
    return ShardHeader(path, n, data_bytes, list(doc), dtypes, shapes, begins, ends, metadata)


def _fast_columns(
    doc: dict[str, Any], data_bytes: int
) -> tuple[list[str], list[list[int]], np.ndarray, np.ndarray] | None:
    """Validate the whole header at once; None when anything is off (the slow path then names it)."""
    extracted = _compiled_columns(doc) if native.COLUMNS is not None else _python_columns(doc)
    if extracted is None:
        return None
    dtypes, shapes, begins, ends, numel, bits = extracted
    if numel.size and numel.max() > 8 * data_bytes:
        return None
    total_bits = numel * bits
    if dtypes and (begins.min() < 0 or (ends < begins).any() or ends.max() > data_bytes):
        return None
    if (total_bits % 8).any() or (total_bits // 8 != ends - begins).any() or _overlaps(begins, ends):
        return None
    return dtypes, shapes, begins, ends


Columns = tuple[list[str], list[list[int]], np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""dtypes, shapes, then int64 begins, ends, element counts and bits per element."""


def _compiled_columns(doc: dict[str, Any]) -> Columns | None:
    assert native.COLUMNS is not None
    table = np.empty((4, len(doc)), dtype=np.int64)
    got = native.COLUMNS.columns(doc, DTYPE_BITS, table)
    if got is None:
        return None
    return got[0], got[1], table[0], table[1], table[2], table[3]


def _python_columns(doc: dict[str, Any]) -> Columns | None:
    """The same columns as the compiled loop (``_columns.c``), in Python."""
    try:
        values = list(doc.values())
        dtypes = list(map(itemgetter("dtype"), values))
        shapes = list(map(itemgetter("shape"), values))
        offsets = list(map(itemgetter("data_offsets"), values))
        if not set(map(type, dtypes)) <= {str} or not set(dtypes) <= DTYPE_BITS.keys():
            return None
        if not set(map(type, shapes)) | set(map(type, offsets)) <= {list}:
            return None
        if values and set(map(len, offsets)) != {2}:
            return None
        flat_offsets = list(chain.from_iterable(offsets))
        flat_dims = list(chain.from_iterable(shapes))
        if not set(map(type, flat_offsets)) | set(map(type, flat_dims)) <= {int}:  # bool is not int here
            return None
        flat = np.fromiter(flat_offsets, dtype=np.int64, count=len(flat_offsets))
        dims = np.fromiter(flat_dims, dtype=np.int64, count=len(flat_dims))
        if dims.size and dims.min() < 0:
            return None
        numel = np.fromiter(map(math.prod, shapes), dtype=np.int64, count=len(shapes))
        bits = np.fromiter(map(DTYPE_BITS.__getitem__, dtypes), dtype=np.int64, count=len(dtypes))
    except (TypeError, KeyError, ValueError, OverflowError):
        return None
    return dtypes, shapes, flat[0::2], flat[1::2], numel, bits


def _overlaps(begins: np.ndarray, ends: np.ndarray) -> bool:
    if begins.size < 2:
        return False
    order = np.lexsort((ends, begins))
    reach = np.maximum.accumulate(ends[order])
    return bool((begins[order][1:] < reach[:-1]).any())


def _slow_columns(
    path: Path, doc: dict[str, Any], data_bytes: int
) -> tuple[list[str], list[list[int]], np.ndarray, np.ndarray]:
    """Validate entry by entry, raising CheckpointError that names the first bad tensor."""
    tensors = {name: _entry(path, name, value) for name, value in doc.items()}
    _check_layout(path, tensors, data_bytes)
    entries = list(tensors.values())
    return (
        [e.dtype for e in entries],
        [list(e.shape) for e in entries],
        np.array([e.begin for e in entries], dtype=np.int64),
        np.array([e.end for e in entries], dtype=np.int64),
    )


def _parse_json(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(raw.rstrip(b" \x00"))
    except orjson.JSONDecodeError as exc:
        raise CheckpointError(path, f"header is not valid JSON ({exc.msg} at byte {exc.pos})") from None
    if not isinstance(doc, dict):
        raise CheckpointError(path, f"header is a JSON {type(doc).__name__}, expected an object")
    return doc


def _metadata(path: Path, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CheckpointError(path, "__metadata__ must map strings to strings")
    return value


def _entry(path: Path, name: str, value: Any) -> TensorEntry:
    if not isinstance(value, dict):
        raise CheckpointError(path, f"tensor {name!r}: entry is not an object")
    dtype = value.get("dtype")
    shape = value.get("shape")
    offsets = value.get("data_offsets")
    if dtype not in DTYPE_BITS:
        raise CheckpointError(path, f"tensor {name!r}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise CheckpointError(path, f"tensor {name!r}: shape must be a list of non-negative integers")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise CheckpointError(
            path, f"tensor {name!r}: data_offsets must be [begin, end] with 0 <= begin <= end"
        )
    bits = math.prod(shape) * DTYPE_BITS[dtype]
    if bits % 8 or bits // 8 != offsets[1] - offsets[0]:
        raise CheckpointError(
            path,
            f"tensor {name!r}: {dtype} {shape} needs {bits / 8:g} bytes but data_offsets span "
            f"{offsets[1] - offsets[0]}",
        )
    return TensorEntry(dtype, tuple(shape), offsets[0], offsets[1])


def _check_layout(path: Path, tensors: dict[str, TensorEntry], data_bytes: int) -> None:
    """Offsets must lie inside the data section and must not overlap."""
    previous_end, previous_name = 0, ""
    for name, entry in sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end)):
        if entry.end > data_bytes:
            raise CheckpointError(
                path,
                f"tensor {name!r}: data_offsets end {entry.end} is past the data section "
                f"({data_bytes} bytes)",
            )
        if entry.begin < previous_end:
            raise CheckpointError(path, f"tensors {previous_name!r} and {name!r} overlap")
        if entry.end > previous_end:
            previous_end, previous_name = entry.end, name
