"""How seatrial starts a server it measures (``experiment``'s ``serve:``, ``capacity --serve-file``): the command
with ``{port}``, its environment, where it says it is ready, how long a stop may take, ``seatrial guard`` around
it, and the nice its threads get once ready. One model and one launch for every command that starts servers."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seatrial.errors import ConfigError
from seatrial.guard.config import GuardFlags
from seatrial.server.process import ServerProcess


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuardSettings(GuardFlags):
    """``seatrial guard`` around every start: its flags, by their names (:class:`GuardFlags`). The stops are
    planned (SIGTERM, recorded as ``stop``) and never spend the restart budget; a start that crashes is
    a failed start, which the experiment itself tries again, so the guard restarts nothing by default."""

    restart_budget: int = Field(0, ge=0, description=GuardFlags.model_fields["restart_budget"].description)


class Serve(_Model):
    command: list[str] = Field(min_length=1)  # ``{port}`` is filled in at every start
    env: dict[str, str] = Field(default_factory=dict)
    host: str = "127.0.0.1"
    health_path: str = "/health"
    ready_timeout_s: float = Field(900.0, gt=0)
    stop_grace_s: float = Field(60.0, gt=0)
    guard: GuardSettings | None = None
    # once each start is ready, every thread of it at this nice (server.process.lower_priority): a client
    # on the same host then gets a CPU whenever it needs one; start-up had the host to itself
    nice: int | None = Field(None, ge=0, le=19)

    @field_validator("command")
    @classmethod
    def _port(cls, v: list[str]) -> list[str]:
        if not any("{port}" in part for part in v):
            raise ValueError("the command must contain {port} (each start gets a free port)")
        return v

    @model_validator(mode="after")
    def _grace_over_the_guards(self) -> Serve:
        """Under the guard, the caller must wait longer than the guard waits for the server: else the
        guard is killed mid-shutdown and the server it was stopping is left."""
        if self.guard is None:
            return self
        from seatrial.guard.config import parse_duration_s

        try:
            guard_s = parse_duration_s(self.guard.stop_grace, "guard.stop_grace")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if self.stop_grace_s <= guard_s:
            raise ValueError(
                f"stop_grace_s {self.stop_grace_s:g} must exceed guard.stop_grace {self.guard.stop_grace} ({guard_s:g} s): "
                "the guard needs its own grace to stop the server before its caller kills the guard"
            )
        return self

    def argv(self, args: list[str], port: int, history: Path | None) -> list[str]:
        """The command with ``{port}`` filled in and ``args`` after it, under ``seatrial guard`` when set
        (its history in ``history``: ConfigError where there is no folder for it)."""
        command = [part.replace("{port}", str(port)) for part in self.command] + args
        if self.guard is None:
            return command
        if history is None:
            raise ConfigError("serve.guard needs a run folder (--out): the guard's history is written there")
        return [sys.executable, "-m", "seatrial.cli.app", "guard", *self.guard.flags(), "--history", str(history),
                "--", *command]  # fmt: skip

    def start(self, argv: list[str], log_path: Path, port: int, env: dict[str, str]) -> ServerProcess:
        """``argv`` launched (``env`` over the serve's own), ready on its health path, then at ``nice``;
        EngineError when it does not come up (it is stopped first), stopped too on Ctrl-C while waiting."""
        server = ServerProcess(argv, log_path, host=self.host, port=port, env={**self.env, **env})
        try:
            server.wait_ready(self.ready_timeout_s, self.health_path)
        except BaseException:  # not ready, Ctrl-C, SIGTERM or a bug while waiting: the server goes too
            server.stop(self.stop_grace_s)
            raise
        if self.nice is not None:
            server.lower_priority(self.nice)
        return server
