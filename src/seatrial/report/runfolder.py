"""The run folder contract: run.json, requests.jsonl, server_metrics.jsonl, summary.json, report.html.

Records and scrapes are appended and flushed as they arrive, so a crash or Ctrl-C leaves every
finished request on disk. Nothing secret is written: configs pass through ``redact`` first.
"""

from __future__ import annotations

import os
import platform
import sys
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


class RunFolder:
    """An open run folder. Use as a context manager so the JSONL files are closed on any exit."""

    def __init__(self, path: Path, command: str, config: dict[str, Any]) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        write_json(
            path / "run.json", {"command": command, "config": redact(config), "environment": environment()}
        )
        self._requests: IO[bytes] = open(path / "requests.jsonl", "ab")  # noqa: SIM115
        self._metrics: IO[bytes] = open(path / "server_metrics.jsonl", "ab")  # noqa: SIM115

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _append(self, fh: IO[bytes], row: dict[str, Any]) -> None:
        fh.write(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        fh.flush()

    def add_request(self, row: dict[str, Any]) -> None:
        self._append(self._requests, row)

    def add_metrics(self, row: dict[str, Any]) -> None:
        self._append(self._metrics, row)

    def write_summary(self, summary: dict[str, Any]) -> Path:
        return write_json(self.path / "summary.json", summary)

    def close(self) -> None:
        for fh in (self._requests, self._metrics):
            if not fh.closed:
                fh.close()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (the process died mid-write) is skipped."""
    rows = []
    for line in path.read_bytes().splitlines():
        try:
            rows.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return rows
