"""Signals the running guard answers: SIGHUP asks for a planned restart, SIGTERM and SIGINT ask it to
stop. Handlers only set a flag and wake the loop's sleep; the loop does the work."""

from __future__ import annotations

import signal
import threading
from typing import Any

from seatrial.guard.outcome import StopRequested


class GuardSignals:
    def __init__(self) -> None:
        self.wake = threading.Event()
        self.stop_requested = False
        self.restart_requested = False
        self._previous: dict[int, Any] = {}

    def _on_hup(self, signum: int, frame: object) -> None:
        self.restart_requested = True
        self.wake.set()

    def _on_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True
        self.wake.set()

    def install(self) -> None:
        handlers = {signal.SIGHUP: self._on_hup, signal.SIGTERM: self._on_stop, signal.SIGINT: self._on_stop}
        self._previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``; a signal ends it at once. Raises :class:`StopRequested` on a stop."""
        self.wake.wait(seconds)
        self.wake.clear()
        if self.stop_requested:
            raise StopRequested
