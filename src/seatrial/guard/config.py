"""Typed configuration of the launch guard, shared by the CLI and by library callers.

Defaults follow the field report this command comes from: a 12 GiB MemAvailable protection line,
``oom_score_adj`` 1000 on the server, a 200 ms poll, and an automatic restart budget of 2 per 6 hours.
They are written once, in :class:`GuardConfig` and :class:`HealthConfig` (what the watchdog runs on, in
seconds); :class:`GuardFlags` (what ``seatrial guard`` and a ``serve.guard:`` block take, durations as
text) takes its defaults from them, and the command's options are generated from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationInfo, field_validator

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


def duration_text(seconds: float) -> str:
    """``seconds`` as a duration flag writes it, in the largest unit it is a whole number of (6h, 10m, 5s)."""
    for unit in ("d", "h", "m", "s"):
        n = seconds / _UNIT_S[unit]
        if n >= 1 and n == int(n):
            return f"{int(n)}{unit}"
    return f"{seconds:g}s"


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


def _g(name: str) -> Any:
    return GuardConfig.model_fields[name].default


def _h(name: str) -> Any:
    return HealthConfig.model_fields[name].default


#: the duration settings, and whether each must be above zero (a window or a timeout of 0 never holds)
DURATIONS = {"restart_window": True, "backoff": False, "recovery_timeout": True, "unhealthy_after": True,
             "health_grace": False, "stop_grace": False}  # fmt: skip


class GuardFlags(BaseModel):
    """What ``seatrial guard`` takes, by its flags' names (``restart_window`` is ``--restart-window``), and
    what a ``serve.guard:`` block of ``experiment`` and ``capacity --serve-file`` takes by the same names:
    every guard setting's flag, help and default, once (defaults from :class:`GuardConfig`); durations as
    text (90s, 30m, 6h). :meth:`config` is the watchdog's :class:`GuardConfig`."""

    model_config = ConfigDict(extra="forbid")

    min_available_gib: float = Field(_g("min_available_gib"), ge=0, description="MemAvailable protection line (GiB).")
    max_swap_growth_gib: float = Field(
        _g("max_swap_growth_gib"), gt=0, description="Kill when swap used grows this much (GiB)."
    )
    poll_ms: int = Field(_g("poll_ms"), gt=0, description="Memory poll interval (ms).")
    restart_budget: int = Field(_g("restart_budget"), ge=0, description="Automatic restarts allowed per window.")
    restart_window: str = Field(duration_text(_g("restart_window_s")), description="Budget window (e.g. 6h, 30m).")
    restart_margin_gib: float = Field(
        _g("restart_margin_gib"), ge=0, description="Restart only above line + margin (GiB)."
    )
    backoff: str = Field(
        duration_text(_g("backoff_s")), description="First backoff before a restart; doubles per failure."
    )
    recovery_timeout: str = Field(
        duration_text(_g("recovery_timeout_s")), description="Give up if memory is not back by then."
    )
    health_url: str | None = Field(None, description="Health probe URL (2xx = healthy).")
    health_interval_ms: int = Field(_h("interval_ms"), gt=0, description="Health probe interval (ms).")
    unhealthy_after: str = Field(
        duration_text(_h("unhealthy_after_s")), description="Unhealthy this long counts as a failure."
    )
    health_grace: str = Field(duration_text(_h("grace_s")), description="Start-up time before failed probes count.")
    oom_score_adj: int = Field(
        _g("oom_score_adj"), ge=-1000, le=1000, description="oom_score_adj of the guarded server."
    )
    stop_grace: str = Field(
        duration_text(_g("stop_grace_s")), description="SIGTERM grace for planned restarts and stops."
    )

    @field_validator(*DURATIONS)
    @classmethod
    def _duration(cls, v: str, info: ValidationInfo) -> str:
        try:
            seconds = parse_duration_s(v, "")
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix(": ")) from None  # the field is named where it is reported
        if seconds <= 0 and DURATIONS[str(info.field_name)]:
            raise ValueError(f"{v!r} is no time at all: give a duration above 0")
        return v

    def seconds(self, name: str) -> float:
        """A duration setting in seconds."""
        return parse_duration_s(getattr(self, name), "--" + name.replace("_", "-"))

    def config(self, history: Path, meminfo: Path = MEMINFO_PATH) -> GuardConfig:
        """The watchdog's configuration: these settings, the history file and where memory is read."""
        health = None
        if self.health_url is not None:
            health = {"url": self.health_url, "interval_ms": self.health_interval_ms,
                      "unhealthy_after_s": self.seconds("unhealthy_after"), "grace_s": self.seconds("health_grace")}  # fmt: skip
        return GuardConfig.model_validate({
            "min_available_gib": self.min_available_gib, "max_swap_growth_gib": self.max_swap_growth_gib,
            "poll_ms": self.poll_ms, "oom_score_adj": self.oom_score_adj, "restart_budget": self.restart_budget,
            "restart_window_s": self.seconds("restart_window"), "restart_margin_gib": self.restart_margin_gib,
            "backoff_s": self.seconds("backoff"), "recovery_timeout_s": self.seconds("recovery_timeout"),
            "stop_grace_s": self.seconds("stop_grace"), "history": history, "health": health,
            "meminfo_path": meminfo,
        })  # fmt: skip

    def flags(self) -> list[str]:
        """The command line that gives ``seatrial guard`` these settings: each that is not its default there."""
        out: list[str] = []
        for key, value in self.model_dump().items():
            if value is not None and value != GuardFlags.model_fields[key].default:
                out += [f"--{key.replace('_', '-')}", str(value)]
        return out
