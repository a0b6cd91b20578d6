"""The ``seatrial`` command. Each capability registers its command from its own module."""

from __future__ import annotations

import typer

from seatrial.cli.common import run_cli

app = typer.Typer(
    name="seatrial",
    help="Sea trials for LLM deployments: audit, plan, convert, guard, hw, bench, accept, report, demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Sea trials for LLM deployments."""


@app.command()
def version() -> None:
    """Print seatrial's version."""
    from seatrial import __version__

    typer.echo(__version__)


# One import per capability; each module defines ``register(app)`` and adds its command(s).
# Keep this list sorted; add a line, never edit another's.
from seatrial.cli import (  # noqa: E402
    accept,
    audit,
    bench,
    convert,
    demo,
    guard,
    hw,
    plan,
    report,
)

for _module in (accept, audit, bench, convert, demo, guard, hw, plan, report):
    _module.register(app)


def main() -> None:
    run_cli(app)


if __name__ == "__main__":
    main()
