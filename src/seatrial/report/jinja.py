"""The report's templates (``report/templates``), autoescaped: one environment for the page and its sections."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

_env = Environment(
    loader=PackageLoader("seatrial", "report/templates"), autoescape=select_autoescape(["html", "j2"])
)


def template(name: str) -> Any:
    """A template of ``report/templates`` (autoescaped)."""
    return _env.get_template(name)
