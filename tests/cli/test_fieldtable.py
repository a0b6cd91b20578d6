"""The command line's option table (seatrial/cli/fields.py) is the settings models' fields, written out so
that ``--help`` needs no pydantic: a field added, renamed or re-described in a model fails here until the
table is written again (``python -m seatrial.cli.fieldtable``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from seatrial.cli.fields import FIELDS
from seatrial.cli.fieldtable import FIELDS_FILE, Opt, models, render, table


def test_the_table_is_the_models() -> None:
    made = table(models())
    assert made == FIELDS, "run: python -m seatrial.cli.fieldtable"
    assert render(made) == FIELDS_FILE.read_text()


def test_each_kind_of_field_becomes_what_the_command_line_takes() -> None:
    class M(BaseModel):
        a: int = 3
        b: list[int] = Field([1, 2], description="levels")
        c: Literal["x", "y"] = "x"
        d: Path | None = None
        e: str = Field(json_schema_extra={"cli": "--e/--no-e"})

    rows = table({"M": M})["M"]
    assert rows["a"] == Opt("--a", "int", False, False, 3, "")
    assert rows["b"] == Opt("--b", "str", False, False, "1,2", "levels")  # the model parses the text
    assert rows["c"].kind == "str" and rows["d"] == Opt("--d", "Path", True, False, None, "")
    assert rows["e"].flag == "--e/--no-e" and rows["e"].required
