"""Resolving file names found in a checkpoint without ever leaving its directory."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from seatrial.errors import CheckpointError


def allowed_roots(root: Path) -> tuple[Path, ...]:
    """Real directories a checkpoint's files may live in.

    The checkpoint directory itself, and for a Hugging Face cache snapshot
    (``.../snapshots/<rev>``) the sibling ``blobs`` folder its symlinks point to.
    """
    real = root.resolve()
    roots = [real]
    if root.parent.name == "snapshots":
        roots.append((root.parent.parent / "blobs").resolve())
    return tuple(roots)


def resolve_inside(root: Path, name: str, *, referrer: Path | None = None) -> Path:
    """Return the real path of ``name`` inside ``root`` or raise CheckpointError.

    Rejects absolute names, ``..`` components, and symlinks whose target lies outside
    the allowed roots. ``referrer`` is the file that named ``name`` (an index), used in
    the error message.
    """
    where = referrer if referrer is not None else root / name
    pure = PurePosixPath(name.replace("\\", "/"))
    if not name or pure.is_absolute() or ".." in pure.parts or ":" in pure.parts[0]:
        raise CheckpointError(where, f"names a file outside the checkpoint directory: {name!r}")
    candidate = root / pure
    real = candidate.resolve()
    if not any(real == r or r in real.parents for r in allowed_roots(root)):
        raise CheckpointError(candidate, f"is a symlink out of the checkpoint directory (-> {real})")
    return real
