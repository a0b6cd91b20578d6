"""The run folder contract, written by every command that runs something:

run.json             command, config, versions, environment (no secrets)
requests.jsonl       one record per request, flushed as it completes (commands that send requests)
server_metrics.jsonl timestamped scrapes of the server's /metrics (the same commands)
summary.json         the command's summary (rewritten as the run goes, so a partial run is readable)
report.html          rendered from summary.json and run.json by ``seatrial.report``

One run per folder: a folder that already holds one of these files is refused (exit 2), and every file is
opened without following a link (``O_NOFOLLOW``) or replaced by a rename (never what a planted link points
to).

Records and scrapes are appended from a background thread and flushed as they arrive, so a crash or
Ctrl-C leaves every finished request on disk. Everything, records and scrapes included, passes through
:func:`redact` first.
"""

from __future__ import annotations

import os
import platform
import queue
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import BaseModel

from seatrial import __version__
from seatrial.errors import ConfigError
from seatrial.jsonio import kind_of, writable_folder, write_bytes, write_json
from seatrial.runs.redact import redact

#: the files of the run-folder contract: a folder holding any of them holds a run
RUN_FILES = ("run.json", "requests.jsonl", "server_metrics.jsonl", "summary.json", "report.html")


def environment() -> dict[str, Any]:
    return {
        "seatrial": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_redacted(path: Path, obj: Any) -> Path:
    """``obj`` without secrets, as JSON, atomically: what every run-folder file and ``--json`` is."""
    return write_json(path, redact(obj))


def check_run_folder(path: Path, what: str = "--out", fresh: bool = True) -> Path:
    """``path`` as a run folder to write (ConfigError, exit 2, otherwise): a folder or nothing yet, where
    this process can write; ``fresh``: holding no run yet (re-using one would mix two runs' records)."""
    if str(path) == "":
        raise ConfigError(f"{what}: an empty path names no folder")
    if os.path.lexists(path) and not path.is_dir():
        mode = (os.stat if path.exists() else os.lstat)(path).st_mode  # a dangling link is a symlink
        raise ConfigError(f"{what} {path}: is {kind_of(mode)}, not a folder")
    if fresh and path.is_dir():
        held = [name for name in RUN_FILES if os.path.lexists(path / name)]
        if held:
            raise ConfigError(f"{what} {path} already holds a run ({held[0]}): give a new folder, or remove "
                              "that one first")  # fmt: skip
    writable_folder(path, f"{what} {path}")
    return path


def _open_new(path: Path) -> IO[bytes]:
    """``path`` created for appending; an existing file or a planted link there is refused, never followed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise ConfigError(f"{path}: exists already (a run folder's files are written once)") from None
    return os.fdopen(fd, "ab")


class _LineWriter:
    """Appends JSON lines from a background thread, flushing each batch, so the load loop never waits
    on the disk (a 1,024-stream level ends with 1,024 records at once)."""

    def __init__(self, path: Path) -> None:
        self._fh: IO[bytes] = _open_new(path)
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"writer-{path.name}", daemon=True)
        self._thread.start()

    def put(self, row: dict[str, Any]) -> None:
        self._queue.put(row)

    def _run(self) -> None:
        while (row := self._queue.get()) is not None:
            row = redact(row)  # a record's error is the server's text: it may quote the credentials
            self._fh.write(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
            if self._queue.empty():
                self._fh.flush()
        self._fh.close()

    def close(self) -> None:
        """Write everything queued, then close the file."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


class RunFolder:
    """An open run folder. Use as a context manager so the JSONL files are closed on any exit.

    ``requests=False`` for commands that send no requests (hw, sync, doctor, demo): the same folder
    without ``requests.jsonl`` and ``server_metrics.jsonl``."""

    def __init__(
        self,
        path: Path,
        command: str,
        config: dict[str, Any],
        *,
        requests: bool = True,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.path = check_run_folder(path, "run folder")
        path.mkdir(parents=True, exist_ok=True)
        info = {"command": command, "config": config, "environment": environment(), **(extra or {})}
        write_redacted(path / "run.json", info)
        self._requests = _LineWriter(path / "requests.jsonl") if requests else None
        self._metrics = _LineWriter(path / "server_metrics.jsonl") if requests else None

    @classmethod
    def existing(cls, path: Path, command: str) -> RunFolder:
        """The run folder ``command`` wrote before (``--resume``), opened to write its summary and files again;
        its run.json is kept as it is. ConfigError where it holds no run, or another command's."""
        check_run_folder(path, "--out", fresh=False)
        if not (path / "run.json").is_file():
            raise ConfigError(f"--resume: {path} holds no {command} run (no run.json)")
        wrote = read_run_json(path / "run.json").get("command")
        if wrote != command:
            raise ConfigError(f"--resume: {path} holds a run of `{wrote}`, not of `{command}`")
        folder = cls.__new__(cls)  # no run.json to write and no requests to append: nothing of __init__
        folder.path, folder._requests, folder._metrics = path, None, None
        return folder

    @classmethod
    def resumable(cls, path: Path, command: str, config: dict[str, Any], resume: bool) -> RunFolder:
        """A command's folder that ``--resume`` continues (trial, experiment): with ``resume`` the one it wrote
        before (:meth:`existing`); else a new one, where ``--out`` is absent or empty (ConfigError naming
        ``--resume`` otherwise)."""
        if resume:
            return cls.existing(path, command)
        if path.is_dir() and any(path.iterdir()):
            raise ConfigError(f"--out {path} exists and is not empty; pass --resume to continue that {command}")
        return cls(path, command, config, requests=False)

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_request(self, row: dict[str, Any]) -> None:
        assert self._requests is not None, "this run folder keeps no requests"
        self._requests.put(row)

    def add_metrics(self, row: dict[str, Any]) -> None:
        assert self._metrics is not None, "this run folder keeps no server metrics"
        self._metrics.put(row)

    def write_summary(self, summary: dict[str, Any] | BaseModel) -> Path:
        return write_redacted(self.path / "summary.json", summary)

    def write_file(self, name: str, content: Any) -> Path:
        """A file beside the contract's (``artifacts.json``, ``table.txt``): JSON unless ``content`` is
        text; redacted either way."""
        target = self.path / name
        if isinstance(content, str):
            return write_bytes(target, redact(content).encode())
        return write_redacted(target, content)

    def close(self) -> None:
        for writer in (self._requests, self._metrics):
            if writer is not None:
                writer.close()


def record(
    out: Path,
    command: str,
    config: dict[str, Any],
    summary: dict[str, Any] | BaseModel,
    *,
    extra: dict[str, Any] | None = None,
    files: dict[str, Any] | None = None,
) -> Path:
    """The run folder of a command that sends no requests, written once it has its summary (hw, sync,
    doctor, compare, demo); ``files`` go beside the contract's (``table.txt``, ``artifacts.json``).
    Commands that stream requests keep a :class:`RunFolder` open while they run instead."""
    with RunFolder(out, command, config, requests=False, extra=extra) as folder:
        folder.write_summary(summary)
        for name, content in (files or {}).items():
            folder.write_file(name, content)
    return out


def read_run_json(path: Path) -> dict[str, Any]:
    """A run folder's ``run.json`` or ``summary.json`` as its object; ConfigError naming the file when it
    cannot be read, is empty, is no JSON (UTF-8) or holds no object."""
    from seatrial.errors import ConfigError

    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: is not a seatrial JSON file ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: holds a JSON {type(data).__name__}, not a seatrial summary object")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (the process died mid-write) is skipped."""
    rows = []
    for line in path.read_bytes().splitlines():
        try:
            rows.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return rows
