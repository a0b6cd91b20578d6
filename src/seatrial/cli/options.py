"""Command-line options made from a settings model's fields (:class:`seatrial.load.settings.BenchSettings`,
:class:`seatrial.capacity.config.CapacityConfig`), so that a flag's name, help and default are written once,
in the model.

``with_settings(command, "BenchSettings", names)`` returns ``command`` with one option per named field added
to its signature (typer reads the signature), from the model's table (:mod:`seatrial.cli.fields`, made from
the model and kept equal to it by a test: ``--help`` imports no pydantic); ``command`` takes them as
``**settings`` and validates them with :func:`settings_from`, which turns pydantic's complaints into one
ConfigError (exit 2).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from seatrial.cli.fields import FIELDS
from seatrial.cli.fieldtable import KINDS, Opt
from seatrial.errors import config_errors

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


def names_of(model: str) -> list[str]:
    """The model's fields, in its order."""
    return list(FIELDS[model])


def option(name: str, row: Opt, override: bool = False) -> inspect.Parameter:
    """One keyword parameter of a typer command for the field; ``override``: unset (None) unless given,
    for an option that overrides a value from a file (an experiment plan's)."""
    kind: Any = KINDS[row.kind]
    unset = override or bool(row.aliases)  # None unless given: the model's default, or an old spelling's value
    if row.optional or unset:
        kind = kind | None
    text = f"{row.help} (over the experiment plan's)" if override else row.help
    annotation = Annotated[kind, typer.Option(row.flag, help=text)]
    default = None if unset else ... if row.required else row.default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def alias_params(name: str, row: Opt) -> list[inspect.Parameter]:
    """A hidden option for each old spelling of the field's flag (``name__0``, ...): see :func:`merge_aliases`."""
    kind: Any = KINDS[row.kind] | None
    return [
        inspect.Parameter(f"{name}__{i}", inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=Annotated[kind, typer.Option(alias, hidden=True)])
        for i, alias in enumerate(row.aliases)
    ]  # fmt: skip


def merge_aliases(kw: dict[str, Any], rows: dict[str, Opt]) -> dict[str, Any]:
    """``kw`` with each old spelling's value moved to its field, with a notice; both spellings given is an
    error (exit 2)."""
    out = dict(kw)
    for name, row in rows.items():
        for i, alias in enumerate(row.aliases):
            value = out.pop(f"{name}__{i}", None)
            if value is None:
                continue
            if out.get(name) is not None:
                raise typer.BadParameter(f"give {row.flag} or {alias}, not both", param_hint=row.flag)
            typer.echo(f"note: {alias} is spelled {row.flag} now (the old spelling still works)", err=True)
            out[name] = value
    return out


def with_settings(
    command: Callable[..., Any], model: str, names: Iterable[str], override: bool = False
) -> Callable[..., Any]:
    """``command`` (which takes ``**settings``) with an option for each of ``model``'s fields ``names``
    (``override``: each None unless given)."""
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    rows = {n: FIELDS[model][n] for n in names}
    params = own + [option(n, row, override) for n, row in rows.items()]
    params += [p for n, row in rows.items() for p in alias_params(n, row)]

    @functools.wraps(command)
    def wrapper(**kw: Any) -> Any:
        return command(**merge_aliases(kw, rows))

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def settings_from(model: type[M], values: dict[str, Any]) -> M:
    """``model`` from the command line's values (unset ones, None, keep the model's default); a bad value is
    one ConfigError naming its flag."""
    given = {k: v for k, v in values.items() if v is not None}
    rows = FIELDS.get(model.__name__, {})
    with config_errors(label=lambda loc: rows[loc].flag.split("/")[0] if loc in rows else loc):
        return model.model_validate(given)
