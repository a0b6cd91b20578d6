"""Raw safetensors I/O for the converter: tensors by absolute offset, row reads, a streaming writer.

Headers are read by the one header reader (``checkpoint.header``); this module turns its entries into
absolute file offsets. numpy's safetensors path cannot hold BF16/F8, so tensors are read as raw
little-endian bytes by their header offsets.
A safetensors file is: u64 header length N (little endian), N bytes of JSON header (padded with
spaces to a multiple of 8 here), then the data section; ``data_offsets`` are relative to it.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import xxhash

from seatrial.checkpoint.dtypes import DTYPE_BITS
from seatrial.checkpoint.header import TensorEntry, read_header
from seatrial.errors import CheckpointError

#: Bytes per element of each whole-byte safetensors dtype (sub-byte ones are only ever linked).
ITEMSIZE_BYTES: dict[str, int] = {k: bits // 8 for k, bits in DTYPE_BITS.items() if bits % 8 == 0}

#: Unsigned integer view used to carry each element width without interpretation.
_RAW_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def read_entries(path: Path) -> tuple[dict[str, TensorEntry], dict[str, str]]:
    """The tensors of a safetensors file by name (absolute offsets) and its ``__metadata__``, from the
    one header reader (:func:`seatrial.checkpoint.header.read_header`: every check, every fuzz case)."""
    shard = read_header(path)
    data_start = 8 + shard.header_bytes
    entries = {name: entry.in_file(name, data_start) for name, entry in shard.tensors.items()}
    return entries, shard.metadata


def read_rows(
    fh: BinaryIO, entry: TensorEntry, row_start: int, row_stop: int, buffer: np.ndarray | None = None
) -> np.ndarray:
    """Read rows ``[row_start, row_stop)`` of ``entry`` as raw unsigned integers, shape (rows, inner).

    With ``buffer`` (1-D, of the raw dtype, large enough) the rows land in its head: no new allocation.
    """
    itemsize = ITEMSIZE_BYTES[entry.dtype]
    count_bytes = (row_stop - row_start) * entry.row_bytes
    count = count_bytes // itemsize
    buf = buffer[:count] if buffer is not None else np.empty(count, dtype=_RAW_VIEW[itemsize])
    fh.seek(entry.begin + row_start * entry.row_bytes)
    got = fh.readinto(buf.data.cast("B"))  # type: ignore[attr-defined]
    if got != count_bytes:
        raise CheckpointError(getattr(fh, "name", "?"), f"short read in tensor {entry.name!r}")
    return buf.reshape(row_stop - row_start, -1)


def map_rows(fh: BinaryIO, entry: TensorEntry, row_start: int, row_stop: int) -> np.ndarray:
    """Rows ``[row_start, row_stop)`` of ``entry`` as a read-only view of the page cache, shape (rows, inner).

    Same values as :func:`read_rows` without the copy into a user buffer (half the CPU of a read pass).
    Only this block is mapped, and only while the returned array lives, so resident memory stays one
    block. A source file truncated while mapped would fault (SIGBUS): the size is checked here first.
    """
    itemsize = ITEMSIZE_BYTES[entry.dtype]
    begin = entry.begin + row_start * entry.row_bytes
    count_bytes = (row_stop - row_start) * entry.row_bytes
    if begin + count_bytes > os.fstat(fh.fileno()).st_size:
        raise CheckpointError(getattr(fh, "name", "?"), f"short read in tensor {entry.name!r}")
    if count_bytes == 0:
        return np.empty((row_stop - row_start, 0), dtype=_RAW_VIEW[itemsize])
    base = begin - begin % mmap.ALLOCATIONGRANULARITY
    view = mmap.mmap(fh.fileno(), begin + count_bytes - base, access=mmap.ACCESS_READ, offset=base)
    raw = np.frombuffer(view, dtype=_RAW_VIEW[itemsize], count=count_bytes // itemsize, offset=begin - base)
    return raw.reshape(row_stop - row_start, -1)


def iter_row_blocks(entry: TensorEntry, chunk_bytes: int) -> list[tuple[int, int]]:
    """Split ``entry`` into row ranges of at most ``chunk_bytes`` (at least one row each)."""
    rows_per = max(1, chunk_bytes // max(1, entry.row_bytes))
    return [(r, min(r + rows_per, entry.rows)) for r in range(0, entry.rows, rows_per)]


@dataclass(frozen=True)
class TensorSpec:
    """What a writer will put in a file: name, safetensors dtype, shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * ITEMSIZE_BYTES[self.dtype]


#: ``__metadata__`` of every file the converter writes (transformers refuses other ``format`` values).
OUTPUT_METADATA = {"format": "pt"}


def encode_header(specs: list[TensorSpec], metadata: dict[str, str] | None) -> bytes:
    """The length prefix and JSON header for ``specs`` laid out back to back in the given order."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for spec in specs:
        header[spec.name] = {
            "dtype": spec.dtype,
            "shape": list(spec.shape),
            "data_offsets": [offset, offset + spec.nbytes],
        }
        offset += spec.nbytes
    body = json.dumps(header, separators=(",", ":")).encode()
    body += b" " * (-len(body) % 8)
    return struct.pack("<Q", len(body)) + body


def raw_dtype(dtype: str) -> np.dtype:
    """The unsigned integer dtype that carries ``dtype``'s elements."""
    return np.dtype(_RAW_VIEW[ITEMSIZE_BYTES[dtype]])


#: Smallest written block whose writeback starts at once (smaller ones wait for the closing fsync).
WRITEBACK_BYTES = 1 << 20
_WRITER_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seatrial-write")


#: Content digest of every output file, recorded in the manifest to tell a finished output on resume.
#: XXH3-128 is not cryptographic; it guards against truncated or altered outputs, not against an attacker.
DIGEST_ALGORITHM = "xxh3_128"


class HashingWriter:
    """Sequential writer that digests (``DIGEST_ALGORITHM``) and counts every byte it writes.

    ``write_async`` hands one buffer to a background thread (file write and hash release the GIL)
    and returns; the caller must not touch that buffer until the next ``write_async`` or ``drain``.
    ``fh`` must be a new, empty file. Each block of at least ``WRITEBACK_BYTES`` is handed to the kernel
    for writeback at once (``POSIX_FADV_DONTNEED`` starts it without waiting), so the disk writes while
    the next block is computed and the closing fsync finds little left to do.
    """

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self.digest = xxhash.xxh3_128()
        self.written_bytes = 0
        self._pending: Future[None] | None = None

    def write_async(self, data: np.ndarray) -> None:
        self.drain()
        self._pending = _WRITER_THREAD.submit(self.write, data)

    def drain(self) -> None:
        """Wait for the background write, re-raising its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def write(self, data: bytes | memoryview | np.ndarray) -> None:
        view = data.data.cast("B") if isinstance(data, np.ndarray) else memoryview(data)
        self._fh.write(view)
        self.digest.update(view)
        if view.nbytes >= WRITEBACK_BYTES and hasattr(os, "posix_fadvise"):
            self._fh.flush()
            os.posix_fadvise(self._fh.fileno(), self.written_bytes, view.nbytes, os.POSIX_FADV_DONTNEED)
        self.written_bytes += view.nbytes


def file_digest(path: Path, chunk_bytes: int = 8 * 1024 * 1024) -> str:
    """Hex ``DIGEST_ALGORITHM`` digest of a whole file, read in chunks."""
    digest = xxhash.xxh3_128()
    with path.open("rb") as fh:
        while block := fh.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()
