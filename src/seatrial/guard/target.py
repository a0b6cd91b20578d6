"""What the watchdog guards: a process group it launched, or a running container."""

from __future__ import annotations

from typing import Any, Protocol


class Target(Protocol):
    kind: str
    launches: int
    owned: bool  # True when the guard launched it (and so stops it when the guard stops)

    def start(self) -> dict[str, Any]:
        """Launch (or relaunch) the server; returns its description for the history."""

    def describe(self) -> dict[str, Any]: ...

    def exit_code(self) -> int | None:
        """The exit code once the server has exited by itself, else ``None``. Must be cheap."""

    def kill(self, graceful_s: float = 0.0, timeout_s: float = 10.0) -> dict[str, Any]:
        """Stop the whole server (at once, or gracefully within ``graceful_s``); returns the evidence."""
