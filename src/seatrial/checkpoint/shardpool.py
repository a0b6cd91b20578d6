"""Shards digested in worker processes while the parent reads the index and configs.

Parsing a 300,000-tensor checkpoint's headers is CPU-bound Python work (JSON objects by the
hundred thousand), so it is spread over forked workers, one shard per task, largest first.
Only ``*.safetensors`` files that resolve inside the checkpoint directory are started early;
the parent then asks for exactly the shards the index names, digesting any others itself.
Small checkpoints, one-CPU hosts, hosts other than Linux and processes that already run threads
(where ``fork`` is unsafe) digest everything in-process.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from types import TracebackType

from seatrial.checkpoint.digest import ShardDigest, digest_shard
from seatrial.checkpoint.index import INDEX_NAME, IndexDigest, index_digest
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import CheckpointError

PARALLEL_MIN_HEADER_BYTES = 4 << 20
"""Below this much header JSON in all, starting workers costs more than it saves."""

_EARLY: dict[Path, ShardPool] = {}


def start_early(root: Path) -> None:
    """Start digesting ``root``'s shards now, while the caller does slower things (the command line
    imports its libraries); the next :meth:`ShardPool.open` of the same directory takes the pool.
    Anything wrong with ``root`` is left for that call to report."""
    try:
        key = root.resolve()
        if key not in _EARLY and key.is_dir():
            _EARLY[key] = ShardPool(root)
    except (OSError, RuntimeError, CheckpointError):
        return


class ShardPool:
    """Context manager: ``digests(shards)`` returns one ShardDigest per (name, real path)."""

    def __init__(self, root: Path) -> None:
        self._futures: dict[Path, Future[ShardDigest]] = {}
        self._index: Future[IndexDigest] | None = None
        self._pool: ProcessPoolExecutor | None = None
        candidates = _candidates(root)
        workers = _workers(len(candidates))
        if workers > 1 and sum(size for _, _, size in candidates) >= PARALLEL_MIN_HEADER_BYTES:
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"))
            if (root / INDEX_NAME).is_file():  # the index too: the parent is busiest at the start
                self._index = self._pool.submit(index_digest, root)
            for name, path, _ in sorted(candidates, key=lambda c: -c[2]):
                self._futures[path] = self._pool.submit(digest_shard, name, path)

    @classmethod
    def open(cls, root: Path) -> ShardPool:
        """The pool :func:`start_early` started for ``root``, else a new one."""
        return _EARLY.pop(root.resolve(), None) or cls(root)

    @property
    def parallel(self) -> bool:
        """Whether worker processes were started."""
        return self._pool is not None

    def __enter__(self) -> ShardPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def index(self) -> IndexDigest | None:
        """The index's digest from a worker, or None (not started, or it failed: the caller reads the
        index itself and so raises its error)."""
        if self._index is None:
            return None
        try:
            return self._index.result()
        except Exception:
            return None

    def digests(self, shards: list[tuple[str, Path]]) -> list[ShardDigest]:
        """Digests of ``shards`` in their order; a worker's failure is redone here to raise its error.
        While workers still have shards waiting, this process takes them one at a time, smallest
        first (the workers take the largest first), instead of idling until they are done."""
        done = {path: digest_shard(name, path) for name, path in self._steal(shards)}
        return [
            done[path]._replace(file=name) if path in done else self._one(name, path) for name, path in shards
        ]

    def _steal(self, shards: list[tuple[str, Path]]) -> Iterator[tuple[str, Path]]:
        names = {path: name for name, path in shards}
        waiting = [path for path in reversed(self._futures) if path in names]  # smallest first
        for path in waiting:
            if self._futures[path].cancel():  # not yet handed to a worker
                del self._futures[path]
                yield names[path], path

    def _one(self, name: str, path: Path) -> ShardDigest:
        future = self._futures.get(path)
        if future is None:
            return digest_shard(name, path)
        try:
            return future.result()._replace(file=name)
        except Exception:  # the worker's error, raised again with its own type and message
            return digest_shard(name, path)


def _workers(tasks: int) -> int:
    if threading.active_count() > 1 or sys.platform != "linux":  # fork is unsafe elsewhere (macOS)
        return 1
    return min(tasks, len(os.sched_getaffinity(0)))


def _candidates(root: Path) -> list[tuple[str, Path, int]]:
    """(name, real path, header bytes) of the directory's shards that resolve inside it."""
    out = []
    for entry in root.glob("*.safetensors"):
        try:
            path = resolve_inside(root, entry.name)
            with open(path, "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
        except (CheckpointError, OSError, struct.error):
            continue  # the parent reports it if the index names it
        out.append((entry.name, path, size))
    return out
