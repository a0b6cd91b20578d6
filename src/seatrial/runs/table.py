"""A table as text cells, built once and shown by the console (rich) and the report (HTML) alike."""

from __future__ import annotations

from typing import NamedTuple


class Table(NamedTuple):
    title: str
    columns: tuple[str, ...]
    rows: list[list[str]]
    ok: list[bool]  # per row: False marks a row to highlight (an invalid level, a failed verdict)
