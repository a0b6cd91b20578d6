"""Atomic JSON writing used by every command's ``--json`` and by run folders, and the rule for what an
output path may be: a regular file (or nothing yet) in a folder seatrial can write. Seatrial never replaces
a device, a FIFO, a folder or a symlink (``--json /dev/full`` stays a device; a link planted in a run
folder is refused, never followed)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import ConfigError

_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def dumps(obj: Any, *, indent: bool = True) -> bytes:
    return orjson.dumps(obj, option=_OPTS if indent else orjson.OPT_SERIALIZE_NUMPY, default=_default)


def _default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def kind_of(mode: int) -> str:
    """What a file mode is, in words: ``a folder``, ``a symlink``, ``a character device``, ``a FIFO``..."""
    kinds = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def writable_folder(path: Path, what: str) -> None:
    """ConfigError (exit 2) unless ``path``'s nearest existing ancestor is a folder this process can write
    (a read-only mount or a folder without write permission is refused before any work)."""
    here = path.absolute()
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise ConfigError(f"{what}: {here} is {kind_of(here.stat().st_mode)}, not a folder")
    if not os.access(here, os.W_OK | os.X_OK):
        raise ConfigError(f"{what}: {here} is not writable (read-only or no permission)")


def check_output_file(path: str | os.PathLike[str], what: str | None = None) -> Path:
    """``path`` as a file seatrial may write (ConfigError, exit 2, otherwise): nothing there yet or a regular
    file (never a folder, device, FIFO or symlink), in a folder that can be written. ``what`` names it in
    the message (``--json``)."""
    target = Path(path)
    name = f"{what} {target}" if what else str(target)
    if str(path) == "":
        raise ConfigError(f"{what or 'output'}: an empty path names no file")
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ConfigError(f"{name}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise ConfigError(f"{name}: is {kind_of(mode)}; seatrial writes only regular files")
    if mode is not None and not os.access(target, os.W_OK):
        raise ConfigError(f"{name}: is read-only")
    writable_folder(target.parent, name)
    return target


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + rename), where :func:`check_output_file`
    allows it: the rename replaces a regular file, never what a link points to."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_output_file(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (temporary file + rename)."""
    return write_bytes(path, dumps(obj) + b"\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    return orjson.loads(Path(path).read_bytes())
