"""Names of a package that load on first use (PEP 562), so that importing the package, or one light
module of it, does not import what its heavier modules need (pydantic, numpy, torch)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``name`` is imported from ``package.<where[name]>`` when first read,
    then kept in the package (a second read costs nothing)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
