"""The guard's history: one JSON line per event, appended and flushed as it happens.

Every line passes through :func:`seatrial.runs.redact` (an ``--api-key`` in the server's command is
never written). Every line carries ``time`` (ISO 8601, UTC), ``time_unix_s``, ``event``, ``reason``, the memory fields of
:class:`~seatrial.guard.meminfo.MemSample` (MemAvailable and swap), and ``target`` (the process group or
container). Events: ``start``, ``health``, ``kill``, ``exit``, ``restart``, ``give-up``, ``stop``, ``refuse``.
A ``restart`` line says ``planned`` true or false; only unplanned restarts spend the restart budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import GuardError
from seatrial.guard.meminfo import MemSample
from seatrial.jsonio import check_output_file
from seatrial.runs.redact import redact

Echo = Callable[[dict[str, Any]], None]
EVENTS = ("start", "health", "kill", "exit", "restart", "give-up", "stop", "refuse")


def _iso(time_unix_s: float) -> str:
    return datetime.fromtimestamp(time_unix_s, tz=timezone.utc).isoformat(timespec="milliseconds")


class History:
    """Appends event lines to ``path``; each line is written with one ``write`` and flushed, then
    handed to ``echo`` (the CLI prints it) if given."""

    def __init__(self, path: Path, echo: Echo | None = None) -> None:
        self.path = Path(path)
        self.echo = echo
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_output_file(self.path, "--history")  # appended to: a regular file, never a device or a link
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        self._fh = os.fdopen(fd, "ab")

    def record(
        self,
        event: str,
        reason: str,
        sample: MemSample,
        target: dict[str, Any],
        **extra: Any,
    ) -> dict[str, Any]:
        if event not in EVENTS:
            raise ValueError(f"unknown history event {event!r}")
        line: dict[str, Any] = redact(
            {
                "time": _iso(sample.time_unix_s),
                "time_unix_s": round(sample.time_unix_s, 3),
                "event": event,
                "reason": reason,
                **sample.as_fields(),
                "target": target,
                **extra,
            }
        )
        self._fh.write(orjson.dumps(line) + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        if self.echo is not None:
            self.echo(line)
        return line

    def close(self) -> None:
        self._fh.close()


def read_history(path: Path) -> list[dict[str, Any]]:
    """All events of a history file, oldest first; a missing file is an empty history."""
    path = Path(path)
    if not path.exists():
        return []
    events: list[dict[str, Any]] = []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            events.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            raise GuardError(f"{path}: line {number} is not JSON") from None
    return events
