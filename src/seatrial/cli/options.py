"""Command-line options made from a settings model's fields (:class:`seatrial.load.settings.BenchSettings`),
so that a flag's name, help and default are written once, in the model.

``with_settings(command, Model, names)`` returns ``command`` with one option per named field added to its
signature (typer reads the signature); ``command`` takes them as ``**settings`` and validates them with
:func:`settings_from`, which turns pydantic's complaints into one ConfigError (exit 2).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from seatrial.errors import config_errors

M = TypeVar("M", bound=BaseModel)


def flag(name: str, field: FieldInfo) -> str:
    """The field's flag: its ``cli`` extra, else ``--`` and its name with dashes."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("cli") or "--" + name.replace("_", "-"))


def _cli_type(annotation: Any) -> Any:
    """What the command line takes for a field: lists and literals as text (the model parses them)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    optional = len(args) < len(typing.get_args(annotation))
    base = args[0] if optional and len(args) == 1 else annotation
    origin = typing.get_origin(base)
    if origin in (list, tuple) or origin is typing.Literal or base not in (str, int, float, bool, Path):
        base = str
    return base | None if optional else base


def _default(field: FieldInfo) -> Any:
    value = field.get_default(call_default_factory=True)
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return value


def option(name: str, field: FieldInfo, override: bool = False) -> inspect.Parameter:
    """One keyword parameter of a typer command for the field; ``override``: unset (None) unless given,
    for an option that overrides a value from a file (an experiment plan's)."""
    kind = _cli_type(field.annotation)
    text = field.description or ""
    if override:
        kind, text = kind | None, f"{text} (over the plan's)"
    annotation = Annotated[kind, typer.Option(flag(name, field), help=text)]  # type: ignore[valid-type]
    default = None if override else ... if field.is_required() else _default(field)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def with_settings(
    command: Callable[..., Any], model: type[BaseModel], names: Iterable[str], override: bool = False
) -> Callable[..., Any]:
    """``command`` (which takes ``**settings``) with an option for each of ``model``'s fields ``names``
    (``override``: each None unless given)."""
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    params = own + [option(n, model.model_fields[n], override) for n in names]

    @functools.wraps(command)
    def wrapper(**kw: Any) -> Any:
        return command(**kw)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def settings_from(model: type[M], values: dict[str, Any]) -> M:
    """``model`` from the command line's values (unset ones, None, keep the model's default)."""
    given = {k: v for k, v in values.items() if v is not None}
    with config_errors():
        return model.model_validate(given)
