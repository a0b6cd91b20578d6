"""What holds for every command as its command line is read (:class:`SeatrialGroup`, the ``seatrial``
group's class).

Every float a command line takes is a finite number: ``--rate inf``, ``--gpu-memory-gib nan`` and
``--threshold-pct inf`` end in exit 2 with one line, as they are read, whatever command declares them.

The command the group resolves (and every command under it) has each float parameter's type replaced by a copy whose conversion refuses NaN and infinity; the copy
keeps its class's range, metavar and help. Types are known by their class's name: typer carries its own
copy of click, whose classes are not the ``click`` package's.

Tables go to stdout, unless ``--json -`` puts the JSON there: then to stderr, so that stdout is one JSON
document (``json_target`` says so as it reads ``-``; each command line starts with stdout).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from typer.core import TyperGroup


class _Finite:
    """Mixed in before a float type: its value, once converted, must be finite."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)  # type: ignore[misc]
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)  # type: ignore[attr-defined]
        return number


def _is_float(kind: Any) -> bool:
    return any(c.__name__ == "FloatParamType" for c in type(kind).__mro__)


def finite(kind: Any) -> Any:
    """``kind`` made to refuse NaN and infinity (``kind`` itself where it is no float or is one already)."""
    if not _is_float(kind) or isinstance(kind, _Finite):
        return kind
    made = copy.copy(kind)
    made.__class__ = type(f"Finite{type(kind).__name__}", (_Finite, type(kind)), {})
    return made


def finite_floats(command: Any) -> None:
    """Every float parameter of ``command`` and of the commands under it refuses NaN and infinity."""
    for param in command.params:
        param.type = finite(param.type)
    for sub in getattr(command, "commands", {}).values():
        finite_floats(sub)


class SeatrialGroup(TyperGroup):
    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        from seatrial.cli.common import out

        out.to_stderr(False)
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            finite_floats(command)
        return name, command, rest
