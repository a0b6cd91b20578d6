"""Invoke the CLI in-process with the exit code the shell would see (``run_cli``'s mapping of
seatrial's errors), and the output."""

from __future__ import annotations

import signal
from typing import NamedTuple

from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.errors import SeatrialError


class Outcome(NamedTuple):
    code: int
    output: str
    exception: BaseException | None


def invoke(args: list[str]) -> Outcome:
    result = CliRunner().invoke(app, args)
    exc = result.exception
    if isinstance(exc, SeatrialError):
        return Outcome(exc.exit_code, f"{result.output}error: {exc}", exc)
    if exc is not None and not isinstance(exc, SystemExit):
        raise exc
    return Outcome(result.exit_code, result.output, exc)


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a command a test will send SIGINT, as Ctrl-C at a terminal does: a runner that
    started the tests in the background with SIGINT ignored (a non-interactive shell's ``cmd &`` does) would
    hand that on, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
