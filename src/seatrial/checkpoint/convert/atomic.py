"""Atomic output: write to a temporary in DST, fsync, rename; link or copy untouched files.

Temporaries are named ``.seatrial-tmp-<file>``: a run killed mid-write leaves at most one per output,
which ``remove_temporaries`` clears at the start of a resumed run. On a full disk the partial
temporary is removed and :class:`DiskFull` names the file that was being written.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from seatrial.checkpoint.convert.stio import OUTPUT_METADATA, HashingWriter, TensorSpec, encode_header
from seatrial.errors import CheckpointError
from seatrial.jsonio import write_json

TMP_PREFIX = ".seatrial-tmp-"


class DiskFull(CheckpointError):
    """ENOSPC while writing ``path``; its partial temporary has been removed."""


def _temporary(final: Path) -> Path:
    return final.with_name(TMP_PREFIX + final.name)


def write_atomic(
    final: Path, specs: list[TensorSpec], produce: Callable[[HashingWriter], None]
) -> tuple[str, int]:
    """Write a safetensors file: header for ``specs``, then ``produce`` streams the data in order.

    Returns (hex digest, ``DIGEST_ALGORITHM``; size in bytes) of the file that was renamed into place.
    """
    tmp = _temporary(final)
    expected = sum(s.nbytes for s in specs)
    try:
        with tmp.open("wb") as fh:
            writer = HashingWriter(fh)
            header = encode_header(specs, OUTPUT_METADATA)
            writer.write(header)
            try:
                produce(writer)
            finally:
                writer.drain()
            if writer.written_bytes != len(header) + expected:
                raise CheckpointError(
                    final, f"wrote {writer.written_bytes} bytes, planned {len(header) + expected}"
                )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise DiskFull(final, "disk full; the partial temporary was removed") from None
        raise CheckpointError(final, f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return writer.digest.hexdigest(), writer.written_bytes


def link_or_copy(src: Path, final: Path) -> str:
    """Hard-link ``src`` to ``final`` (same filesystem) or copy it atomically; return the method used."""
    final.parent.mkdir(parents=True, exist_ok=True)
    final.unlink(missing_ok=True)
    try:
        os.link(src, final)
        return "hardlink"
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise CheckpointError(final, f"cannot link from {src}: {exc.strerror}") from None
    tmp = _temporary(final)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise DiskFull(final, "disk full while copying; the partial temporary was removed") from None
        raise CheckpointError(final, f"cannot copy from {src}: {exc.strerror}") from None
    return "copy"


def remove_temporaries(dst: Path, json_names: tuple[str, ...]) -> list[str]:
    """Delete temporaries a killed run left in ``dst`` (ours, and ``write_json``'s ``.<name>.*`` for
    ``json_names``); return their names."""
    patterns = [TMP_PREFIX + "*", *(f".{name}.*" for name in json_names)]
    removed = []
    for pattern in patterns:
        for path in sorted(dst.rglob(pattern)):
            path.unlink()
            removed.append(str(path.relative_to(dst)))
    return removed


def write_public_json(path: Path, obj: object) -> None:
    """``write_json`` (atomic), then mode 0644: its temporary is private (0600), and a loader running
    as another user must still read config.json and the index."""
    write_json(path, obj)
    path.chmod(0o644)


def fsync_dir(path: Path) -> None:
    """Make renames in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
