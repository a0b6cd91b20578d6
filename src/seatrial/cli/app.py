"""The ``seatrial`` command. Each capability registers its command from its own module.

The command line imports only the module of the command it runs (a full ``import`` of every
capability costs about a second of start-up: aiohttp, numpy, pydantic models); ``--help`` and
library callers (``from seatrial.cli.app import app``) get every command.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

# One name per capability, in the order of a deployment's trial (the root help lists them so); module
# seatrial.cli.<name> defines ``register(app)`` adding command <name>.
COMMANDS = (
    "audit", "plan", "convert", "guard", "sync", "doctor", "hw", "io", "bench", "accept", "capacity", "experiment",
    "compare", "trial", "report", "demo",
)  # fmt: skip


def build_app(commands: tuple[str, ...] = COMMANDS) -> typer.Typer:
    """The ``seatrial`` Typer app with ``commands`` registered."""
    import typer

    from seatrial.cli.group import SeatrialGroup

    app = typer.Typer(
        name="seatrial",
        cls=SeatrialGroup,
        help=f"Sea trials for LLM deployments: {', '.join(commands)}.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help (click's formatter): rich's costs ~0.12 s of every start
    )

    @app.callback()
    def _root() -> None:
        """Sea trials for LLM deployments."""

    @app.command()
    def version() -> None:
        """Print seatrial's version."""
        from seatrial import __version__

        typer.echo(__version__)

    for name in commands:
        import_module(f"seatrial.cli.{name}").register(app)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # every command, built once on first use
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _audit_early(argv: list[str]) -> None:
    """``seatrial audit DIR``: start reading DIR's shard headers in worker processes before the command
    line's own imports (typer, rich, pydantic: about as long as the reading), so the two overlap."""
    if len(argv) > 2 and argv[1] == "audit" and not argv[2].startswith("-"):
        from pathlib import Path

        from seatrial.checkpoint.shardpool import start_early

        start_early(Path(argv[2]))


def main() -> None:
    from seatrial.childenv import quiet_blas, quiet_plugins

    quiet_blas()
    quiet_plugins()
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    _audit_early(sys.argv)
    from seatrial.cli.common import run_cli

    run_cli(build_app((wanted,) if wanted in COMMANDS else COMMANDS))


if __name__ == "__main__":
    main()
