"""Typed configuration of the launch guard, shared by the CLI and by library callers.

Defaults follow the field report this command comes from: a 12 GiB MemAvailable protection line,
``oom_score_adj`` 1000 on the server, a 200 ms poll, and an automatic restart budget of 2 per 6 hours.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, HttpUrl

from seatrial.errors import ConfigError
from seatrial.guard.meminfo import GIB, MEMINFO_PATH

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration_s(text: str, flag: str) -> float:
    """Parse ``90s``, ``30m``, ``6h``, ``1d`` or a bare number of seconds into seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ConfigError(f"{flag}: {text!r} is not a duration (examples: 90s, 30m, 6h)")
    return float(match.group(1)) * _UNIT_S[match.group(2) or "s"]


class HealthConfig(BaseModel):
    """The optional HTTP health probe: unhealthy for ``unhealthy_after_s`` counts as a failure.

    ``grace_s`` is the start-up time during which failed probes do not count (a large model can take
    ten minutes to load); once the server has answered healthy once, the grace ends early.
    """

    model_config = ConfigDict(extra="forbid")

    url: HttpUrl
    interval_ms: int = Field(default=2000, gt=0)
    timeout_ms: int = Field(default=2000, gt=0)
    unhealthy_after_s: float = Field(default=60.0, gt=0)
    grace_s: float = Field(default=900.0, ge=0)


class GuardConfig(BaseModel):
    """Everything the watchdog loop needs. Sizes in GiB, durations in seconds unless named ``_ms``."""

    model_config = ConfigDict(extra="forbid")

    min_available_gib: float = Field(default=12.0, ge=0)
    max_swap_growth_gib: float = Field(default=2.0, gt=0)
    poll_ms: int = Field(default=200, gt=0)
    oom_score_adj: int = Field(default=1000, ge=-1000, le=1000)
    restart_budget: int = Field(default=2, ge=0)
    restart_window_s: float = Field(default=6 * 3600.0, gt=0)
    restart_margin_gib: float = Field(default=2.0, ge=0)
    backoff_s: float = Field(default=5.0, ge=0)
    backoff_max_s: float = Field(default=300.0, ge=0)
    stable_after_s: float = Field(default=600.0, gt=0)
    recovery_timeout_s: float = Field(default=600.0, gt=0)
    kill_timeout_s: float = Field(default=10.0, gt=0)
    stop_grace_s: float = Field(default=30.0, ge=0)
    history: Path = Path("guard-history.jsonl")
    health: HealthConfig | None = None
    meminfo_path: Path = MEMINFO_PATH

    @property
    def min_available_bytes(self) -> int:
        return int(self.min_available_gib * GIB)

    @property
    def max_swap_growth_bytes(self) -> int:
        return int(self.max_swap_growth_gib * GIB)

    @property
    def restart_line_bytes(self) -> int:
        """MemAvailable a restart waits for: the protection line plus the margin."""
        return int((self.min_available_gib + self.restart_margin_gib) * GIB)

    def backoff_for(self, consecutive_failures: int) -> float:
        """Seconds to wait before the restart after the n-th consecutive failure (doubling, capped)."""
        if consecutive_failures <= 0:
            return 0.0
        return min(self.backoff_s * 2.0 ** (consecutive_failures - 1), self.backoff_max_s)
