"""The synthetic server as a module fixture, the one place the tests make it: ``server =
synthetic_server(itl_s=0.001)`` at a test module's top gives its tests a ``server`` (a running
:class:`ThreadedServer` of that :class:`SyntheticConfig`) for the module's life."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from seatrial.testing.server import SyntheticConfig, ThreadedServer


def synthetic_server(**config: Any) -> Callable[[], Iterator[ThreadedServer]]:
    """A module-scoped fixture serving ``SyntheticConfig(**config)``."""

    @pytest.fixture(scope="module")
    def server() -> Iterator[ThreadedServer]:
        with ThreadedServer(SyntheticConfig(**config)) as srv:
            yield srv

    return server
