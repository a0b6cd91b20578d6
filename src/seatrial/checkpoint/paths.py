"""Resolving file names found in a checkpoint without ever leaving its directory: the one resolver
for every reader (audit, plan, convert, sync) and, for names written, for every writer (convert)."""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath

from seatrial.errors import CheckpointError


def allowed_roots(root: Path) -> tuple[Path, ...]:
    """Real directories a checkpoint's files may live in.

    The checkpoint directory itself, and for a Hugging Face cache snapshot (``.../snapshots/<rev>``) the
    cache's own ``blobs`` folder its symlinks point to: a real folder beside ``snapshots``, never a
    symlink (a ``blobs -> /`` link would otherwise let a snapshot name any file on the host).
    """
    real = root.resolve()
    roots = [real]
    if root.parent.name == "snapshots":
        cache = root.parent.parent
        blobs = cache / "blobs"
        if blobs.is_dir() and not blobs.is_symlink() and blobs.resolve().parent == cache.resolve():
            roots.append(blobs.resolve())
    return tuple(roots)


def _checked_name(name: str, where: Path) -> PurePosixPath:
    """``name`` as a relative path that stays below its folder, or CheckpointError naming ``where``."""
    pure = PurePosixPath(name.replace("\\", "/")) if isinstance(name, str) else None
    if pure is None or not pure.parts or pure.is_absolute() or ".." in pure.parts or ":" in pure.parts[0]:
        raise CheckpointError(where, f"names a file outside the checkpoint directory: {name!r}")
    return pure


def resolve_inside(root: Path, name: str, *, referrer: Path | None = None) -> Path:
    """Return the real path of ``name`` inside ``root`` or raise CheckpointError.

    Rejects absolute names, ``..`` components, empty names and ``.``, and symlinks whose target lies
    outside the allowed roots. ``referrer`` is the file that named ``name`` (an index), used in the
    error message.
    """
    where = referrer if referrer is not None else root / str(name)
    pure = _checked_name(name, where)
    candidate = root / pure
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError):  # ELOOP (3.13) or "Symlink loop" (3.11)
        raise CheckpointError(candidate, "is a symlink loop") from None
    if not any(real == r or r in real.parents for r in allowed_roots(root)):
        raise CheckpointError(candidate, f"is a symlink out of the checkpoint directory (-> {real})")
    if real in allowed_roots(root):
        raise CheckpointError(where, f"names the checkpoint directory itself, not a file: {name!r}")
    _not_special(candidate, real)
    return real


def _not_special(candidate: Path, real: Path) -> None:
    """A FIFO, device or socket is no checkpoint file: reading one blocks or never ends."""
    try:
        mode = real.stat().st_mode
    except OSError:
        return  # absent: the caller says what it expected
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        raise CheckpointError(candidate, "is not a regular file (a FIFO, device or socket)")


def output_path(root: Path, name: str) -> Path:
    """Where ``name`` is written below the output directory ``root``: the same name rules as
    :func:`resolve_inside`, and its folder must resolve inside ``root`` (no symlinked folder out)."""
    pure = _checked_name(name, root / str(name))
    target = root / pure
    parent = target.parent.resolve()
    real_root = root.resolve()
    if parent != real_root and real_root not in parent.parents:
        raise CheckpointError(target, f"would be written outside {root} (its folder resolves to {parent})")
    if target.is_symlink():
        raise CheckpointError(target, "is a symlink; refusing to write through it")
    return target
