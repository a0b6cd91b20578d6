"""Helpers shared by CLI commands: error mapping, JSON output, parsing of list flags, verdict exits."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from seatrial.errors import ConfigError, SeatrialError

if TYPE_CHECKING:
    from rich.console import Console

INTERNAL_ERROR_EXIT = 70  # EX_SOFTWARE: a bug in seatrial, never a verdict (1) or bad input (2)


class LazyConsole:
    """A rich Console made on first use: importing rich costs about 50 ms that ``--help`` never needs.
    Attribute access reaches the Console; :meth:`get` gives the Console itself (for rich's own widgets)."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._console: Console | None = None

    def to_stderr(self, stderr: bool) -> None:
        """Print to stderr (True) or stdout (False) from now on."""
        if self._kwargs.get("stderr", False) != stderr:
            self._kwargs["stderr"] = stderr
            self._console = None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich imported on first use)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


console = LazyConsole(stderr=True, soft_wrap=True)  # a message is one line, whatever its paths: grep finds it
# Tables stay readable when stdout is a file or a pipe (CI logs, evidence files).
out = LazyConsole(width=None if sys.stdout.isatty() else 160)


def run_cli(app: typer.Typer) -> None:
    """Run the typer app; map seatrial errors to a one-line message and their exit code."""
    try:
        # Without standalone mode click *returns* the code of a typer.Exit instead of exiting.
        rc = app(standalone_mode=False)
    except SeatrialError as exc:
        console.print(f"[bold red]error:[/] {escape(_redacted(str(exc)))}", highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        console.print("[yellow]aborted[/]")
        sys.exit(130)
    except Exception as exc:
        # typer vendors click; its usage errors carry show() and exit_code.
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(int(exc.exit_code))
        internal_error(exc)
    sys.exit(rc if isinstance(rc, int) else 0)


def _redacted(message: str) -> str:
    """An error's text as the console shows it: a server's words in it may quote the credentials."""
    from seatrial.runs.redact import redact_text

    return redact_text(message)


def internal_error(exc: BaseException) -> None:
    """An exception seatrial did not expect: one line (the traceback with SEATRIAL_DEBUG=1), exit 70."""
    console.print(
        f"[bold red]internal error:[/] {type(exc).__name__}: {escape(_redacted(str(exc)))} (a seatrial bug; SEATRIAL_DEBUG=1 shows where)",
        highlight=False,
        markup=True,
    )
    if os.environ.get("SEATRIAL_DEBUG") == "1":
        console.print(traceback.format_exc(), highlight=False, markup=False)
    sys.exit(INTERNAL_ERROR_EXIT)


def json_target(text: str) -> Path:
    """``--json``'s parser: ``-`` (stdout) or a file seatrial may write (``jsonio.check_output_file``),
    checked as the command line is read, before any work: a whole run is never lost to a bad path."""
    if text == "-":
        out.to_stderr(True)  # stdout holds the JSON alone
        return Path(text)
    from seatrial.jsonio import check_output_file

    return check_output_file(text, "--json")


def history_target(text: str) -> Path:
    """``--history``'s parser: a regular file (or none yet) in a writable folder, checked before any work."""
    from seatrial.jsonio import check_output_file

    return check_output_file(text, "--history")


def out_folder(text: str) -> Path:
    """``--out``'s parser: a new run folder (``runs.folder.check_run_folder``), checked before any work."""
    return _folder(text, fresh=True)


def out_folder_to_resume(text: str) -> Path:
    """``--out`` of a command that may continue a folder (``experiment --resume``): a folder or none yet,
    writable; whether it may hold a run already is the command's to say."""
    return _folder(text, fresh=False)


def _folder(text: str, fresh: bool) -> Path:
    if text == "":
        raise ConfigError("--out: an empty path names no folder")
    from seatrial.runs.folder import check_run_folder

    return check_run_folder(Path(text), "--out", fresh=fresh)


def emit_json(path: Path | None, payload: Any) -> None:
    """Write the machine-readable summary when ``--json PATH`` was given (``-`` means stdout)."""
    if path is None:
        return
    from seatrial.runs.redact import redact

    if str(path) == "-":
        from seatrial.jsonio import dumps

        sys.stdout.write(dumps(redact(payload)).decode() + "\n")
        return
    from seatrial.jsonio import write_json

    write_json(path, redact(payload))
    console.print(f"wrote {path}", highlight=False)


def verdict_exit(trials: Iterable[Any], require: list[str]) -> None:
    """Exit with what the verdicts add up to: 0 passed, 1 a failed verdict, 8 nothing measured."""
    from seatrial.runs.verdicts import NOTHING_MEASURED_EXIT, judge_run

    judged = judge_run(trials, require)
    for name in judged["missing_required"]:
        console.print(f"[red]required trial not measured:[/] {name}", highlight=False)
    if judged["exit_code"] == NOTHING_MEASURED_EXIT:
        console.print("nothing was measured: every trial is UNAVAILABLE or UNSUPPORTED (exit 8)")
    raise typer.Exit(judged["exit_code"])


def parse_int_list(text: str | None, flag: str) -> list[int]:
    """Parse ``1,2,4,8`` into ``[1, 2, 4, 8]`` with a clear error on bad input."""
    if text is None or text.strip() == "":
        return []
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise ConfigError(f"{flag}: {part!r} is not an integer") from None
        if value <= 0:
            raise ConfigError(f"{flag}: values must be positive, got {value}")
        values.append(value)
    return values


def parse_name_list(text: str | None) -> list[str]:
    if not text:
        return []
    return [p.strip() for p in text.split(",") if p.strip()]


def write_folder(out_dir: Path | None, command: str, config: dict[str, Any], summary: Any, **kw: Any) -> None:
    """``--out DIR`` of a command that sends no requests: its run folder (``runs.record``) and report."""
    if out_dir is None:
        return
    from seatrial.report.html import write_report
    from seatrial.runs import record

    record(out_dir, command, config, summary, **kw)
    console.print(f"report: {write_report(out_dir)}", highlight=False)


@contextmanager
def partial_on_interrupt(out_dir: Path | None, folder: Any) -> Iterator[None]:
    """A run's work: Ctrl-C ends it as RunInterrupted naming the partial run folder; the folder (a
    RunFolder, or None) is closed either way."""
    from seatrial.errors import RunInterrupted

    try:
        yield
    except KeyboardInterrupt:
        where = f"; partial run folder: {out_dir}" if out_dir else ""
        raise RunInterrupted(f"interrupted{where}") from None
    finally:
        if folder:
            folder.close()
