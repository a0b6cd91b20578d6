"""Cheap sampling of host memory from ``/proc/meminfo``.

Definitions (kernel figures, converted from kB to bytes):
- ``mem_available_bytes``: ``MemAvailable``, the kernel's estimate of memory that can be given to a new
  workload without swapping.
- ``swap_used_bytes``: ``SwapTotal - SwapFree``.

The reader keeps the file open and re-reads it with one ``pread`` per sample, so a poll costs one
system call and a few byte searches, not an open/parse of the whole file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from seatrial.errors import GuardError

GIB = 1024**3
MEMINFO_PATH = Path("/proc/meminfo")
_READ_BYTES = 8192


@dataclass(frozen=True)
class MemSample:
    """One reading of host memory, with the wall-clock time it was taken."""

    time_unix_s: float
    mem_available_bytes: int
    swap_used_bytes: int

    def as_fields(self) -> dict[str, float | int]:
        """The fields every history line carries."""
        return {
            "mem_available_bytes": self.mem_available_bytes,
            "mem_available_gib": round(self.mem_available_bytes / GIB, 3),
            "swap_used_bytes": self.swap_used_bytes,
            "swap_used_gib": round(self.swap_used_bytes / GIB, 3),
        }


def _field_kb(text: bytes, name: bytes, path: Path) -> int:
    start = text.find(name)
    if start < 0:
        raise GuardError(f"{path}: no {name.decode().rstrip(':')} line")
    end = text.find(b"\n", start)
    parts = text[start + len(name) : end].split()
    if not parts or not parts[0].isdigit():
        raise GuardError(f"{path}: malformed {name.decode().rstrip(':')} line")
    return int(parts[0])


def parse_meminfo(text: bytes, path: Path = MEMINFO_PATH, time_unix_s: float = 0.0) -> MemSample:
    """Parse the three fields the guard needs out of a ``/proc/meminfo`` text."""
    available_kb = _field_kb(text, b"MemAvailable:", path)
    swap_total_kb = _field_kb(text, b"SwapTotal:", path)
    swap_free_kb = _field_kb(text, b"SwapFree:", path)
    return MemSample(
        time_unix_s=time_unix_s,
        mem_available_bytes=available_kb * 1024,
        swap_used_bytes=max(0, swap_total_kb - swap_free_kb) * 1024,
    )


class MemInfoReader:
    """Samples ``/proc/meminfo`` (or a stand-in file with the same format) through one open descriptor."""

    def __init__(self, path: Path = MEMINFO_PATH) -> None:
        self.path = Path(path)
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot open ({exc.strerror})") from None

    def sample(self) -> MemSample:
        text = os.pread(self._fd, _READ_BYTES, 0)
        return parse_meminfo(text, self.path, time.time())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> MemInfoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
