"""Helpers shared by CLI commands: error mapping, JSON output, parsing of list flags."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from seatrial.errors import ConfigError, SeatrialError
from seatrial.jsonio import write_json

console = Console(stderr=True)
# Tables stay readable when stdout is a file or a pipe (CI logs, evidence files).
out = Console(width=None if sys.stdout.isatty() else 160)


def run_cli(app: typer.Typer) -> None:
    """Run the typer app; map seatrial errors to a one-line message and their exit code."""
    try:
        # Without standalone mode click *returns* the code of a typer.Exit instead of exiting.
        rc = app(standalone_mode=False)
    except SeatrialError as exc:
        console.print(f"[bold red]error:[/] {exc}", highlight=False)
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
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


def emit_json(path: Path | None, payload: Any) -> None:
    """Write the machine-readable summary when ``--json PATH`` was given (``-`` means stdout)."""
    if path is None:
        return
    if str(path) == "-":
        from seatrial.jsonio import dumps

        sys.stdout.write(dumps(payload).decode() + "\n")
        return
    write_json(path, payload)
    console.print(f"wrote {path}", highlight=False)


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
