"""The documented exception tree. The CLI turns each into a clear message and an exit code.

    SeatrialError
    ├── ConfigError        bad flags, profile files, or arguments (exit 2)
    ├── CheckpointError    unreadable, malformed or hostile checkpoint files (exit 3)
    ├── ServerError        the server under test cannot be reached or answers nonsense at start (exit 4)
    │   └── ServerRefused  every request answered HTTP 401/403 (exit 4)
    ├── EngineError        a local engine could not be installed or started (exit 5)
    ├── HardwareError      GPU stack problems that stop a whole run (exit 6)
    ├── GuardError         the launch guard refused or gave up (exit 7)
    └── RunInterrupted     Ctrl-C; the partial run folder is kept (exit 130)

A failed *request* is never an exception: it is a record with its error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any


class SeatrialError(Exception):
    """Base of every error seatrial raises on purpose."""

    exit_code = 1


class ConfigError(SeatrialError):
    exit_code = 2


class CheckpointError(SeatrialError):
    exit_code = 3

    def __init__(self, path: object, message: str) -> None:
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class ServerError(SeatrialError):
    exit_code = 4


class ServerRefused(ServerError):
    """The server refused every request (HTTP 401/403): it cannot be used by this client at all, so a whole
    run stops here (a trial or probe does not just fail)."""


class EngineError(SeatrialError):
    exit_code = 5


class HardwareError(SeatrialError):
    exit_code = 6


class GuardError(SeatrialError):
    exit_code = 7


class RunInterrupted(SeatrialError):
    exit_code = 130


def validation_message(exc: Exception, where: str = "", label: Callable[[str], str] | None = None) -> str:
    """A pydantic ValidationError in one line, ``where: field.path: message; ...``; ``label`` names a
    field as the user wrote it (a flag, ``--health-url`` for ``health.url``)."""
    msgs = errors_message(exc.errors() if hasattr(exc, "errors") else [], label) or str(exc)
    return f"{where}: {msgs}" if where else msgs


def errors_message(errors: Sequence[Mapping[str, Any]], label: Callable[[str], str] | None = None) -> str:
    """pydantic's error records in one line, ``field.path: message; ...`` (:func:`validation_message`'s body)."""
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{label(loc) if label else loc}: {msg}" if loc else msg)  # a rule over several fields: its message
    return "; ".join(parts)


def as_flag(loc: str) -> str:
    """``max_model_len`` -> ``--max-model-len``: a field named as its command-line flag."""
    return "--" + loc.replace("_", "-")


@contextlib.contextmanager
def config_errors(
    where: str = "", label: Callable[[str], str] | None = None, error: type[SeatrialError] = ConfigError
) -> Iterator[None]:
    """Turn a pydantic ValidationError raised inside into ``error`` (ConfigError, exit 2) with
    :func:`validation_message`: the one translation of bad settings into a clear line."""
    from pydantic import ValidationError

    try:
        yield
    except ValidationError as exc:
        raise error(validation_message(exc, where, label)) from None
