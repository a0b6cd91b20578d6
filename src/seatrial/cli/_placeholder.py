"""Removed once the first capability registers its command."""

import typer


def register(app: typer.Typer) -> None:
    return None
