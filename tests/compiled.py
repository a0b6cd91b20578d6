"""Skip (or, in CI, fail) a test of a compiled loop that the install could not build."""

from __future__ import annotations

import os

import pytest


def compiled_or_skip(built: bool, what: str) -> None:
    """``built``: whether the compiled module imported. CI sets SEATRIAL_REQUIRE_KERNEL=1: never skip there."""
    if built:
        return
    msg = f"{what} was not built: no C compiler at install time"
    if os.environ.get("SEATRIAL_REQUIRE_KERNEL") == "1":
        pytest.fail(msg)
    pytest.skip(msg)
