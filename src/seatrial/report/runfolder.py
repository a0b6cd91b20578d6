"""The run folder contract: run.json, requests.jsonl, server_metrics.jsonl, summary.json, report.html.

Records and scrapes are appended and flushed as they arrive, so a crash or Ctrl-C leaves every
finished request on disk. Nothing secret is written: configs pass through ``redact`` first.
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

from seatrial import __version__
from seatrial.jsonio import write_json

SECRET_WORDS = ("api_key", "apikey", "authorization", "password", "secret", "bearer")


def redact(obj: Any) -> Any:
    """Drop values whose key names look secret (api keys, tokens), recursively."""
    if isinstance(obj, dict):
        return {k: ("<redacted>" if _secret(k) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


def _secret(key: str) -> bool:
    """``api_key``, ``hf_token``, ``Authorization``... but not ``api_key_env`` (a variable's name)."""
    k = key.lower().replace("-", "_")
    if k.endswith("_env"):
        return False
    return any(w in k for w in SECRET_WORDS) or k == "token" or k.endswith("_token")


def environment() -> dict[str, Any]:
    return {
        "seatrial": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


class _LineWriter:
    """Appends JSON lines from a background thread, flushing each batch, so the load loop never waits
    on the disk (a 1,024-stream level ends with 1,024 records at once)."""

    def __init__(self, path: Path) -> None:
        self._fh: IO[bytes] = open(path, "ab")  # noqa: SIM115
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"writer-{path.name}", daemon=True)
        self._thread.start()

    def put(self, row: dict[str, Any]) -> None:
        self._queue.put(row)

    def _run(self) -> None:
        while (row := self._queue.get()) is not None:
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
    """An open run folder. Use as a context manager so the JSONL files are closed on any exit."""

    def __init__(self, path: Path, command: str, config: dict[str, Any]) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        write_json(
            path / "run.json", {"command": command, "config": redact(config), "environment": environment()}
        )
        self._requests = _LineWriter(path / "requests.jsonl")
        self._metrics = _LineWriter(path / "server_metrics.jsonl")

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_request(self, row: dict[str, Any]) -> None:
        self._requests.put(row)

    def add_metrics(self, row: dict[str, Any]) -> None:
        self._metrics.put(row)

    def write_summary(self, summary: dict[str, Any]) -> Path:
        return write_json(self.path / "summary.json", summary)

    def close(self) -> None:
        self._requests.close()
        self._metrics.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (the process died mid-write) is skipped."""
    rows = []
    for line in path.read_bytes().splitlines():
        try:
            rows.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return rows
