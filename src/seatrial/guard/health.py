"""The optional HTTP health probe, run in its own thread so the memory poll never waits on the network.

Definitions: a probe is *ok* when ``GET url`` answers 2xx within the timeout. After a launch the server
is *starting* until its first ok probe or until ``grace_s`` has passed. It is *unhealthy* while its
latest probe failed, and ``unhealthy_s`` is the time since the last ok probe (or since the grace ended,
if it never answered). Unhealthy for ``unhealthy_after_s`` counts as a failure of the guarded server.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from seatrial.guard.config import HealthConfig


@dataclass(frozen=True)
class HealthStatus:
    state: str  # "starting" | "healthy" | "unhealthy"
    unhealthy_s: float
    last_error: str | None

    @property
    def failed(self) -> bool:
        return self.state == "unhealthy"


# Probes go straight to the server: proxy variables in the environment are ignored.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def probe(url: str, timeout_s: float) -> str | None:
    """One probe: ``None`` when ok, else a short description of what went wrong."""
    try:
        with _OPENER.open(url, timeout=timeout_s) as response:
            return None if 200 <= response.status < 300 else f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


class HealthProbe:
    def __init__(self, config: HealthConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reset()

    def reset(self) -> None:
        """Call at every launch: the new server gets its start-up grace again."""
        with self._lock:
            self._launched_at = time.monotonic()
            self._last_ok_at: float | None = None
            self._last_error: str | None = None
            self._latest_ok = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="seatrial-guard-health", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.config.timeout_ms / 1000 + 1)

    def _run(self) -> None:
        interval_s = self.config.interval_ms / 1000
        while not self._stop.is_set():
            error = probe(str(self.config.url), self.config.timeout_ms / 1000)
            with self._lock:
                self._latest_ok = error is None
                self._last_error = error
                if error is None:
                    self._last_ok_at = time.monotonic()
            self._stop.wait(interval_s)

    def status(self) -> HealthStatus:
        now = time.monotonic()
        with self._lock:
            if self._latest_ok:
                return HealthStatus("healthy", 0.0, None)
            if self._last_ok_at is not None:
                return HealthStatus("unhealthy", now - self._last_ok_at, self._last_error)
            grace_end = self._launched_at + self.config.grace_s
            if now < grace_end:
                return HealthStatus("starting", 0.0, self._last_error)
            return HealthStatus("unhealthy", now - grace_end, self._last_error)
