"""The ports seatrial picks for a child (an engine, an experiment's server) and for its own workers'
rendezvous are never handed to someone else before their user binds them (issue 42 item 22)."""

from __future__ import annotations

import contextlib
import errno
import socket

import pytest

from seatrial.server import process
from seatrial.server.process import QUIET_LOWEST, ephemeral_low, free_port


def test_a_childs_port_lies_below_the_ephemeral_range_where_no_bind_0_can_take_it() -> None:
    """Catches a port taken from the ephemeral range (``bind(0)``, then released): between the choice and the
    child's bind, 500 neighbours binding port 0 (servers, and every outbound connection, draw from that
    range) are never handed it, and it still binds afterwards."""
    low = ephemeral_low()
    assert low > QUIET_LOWEST + 1000  # this host leaves quiet ports (Linux's default range starts at 32768)
    chosen = {free_port() for _ in range(20)}
    assert all(QUIET_LOWEST <= p < low for p in chosen), sorted(chosen)
    port = free_port()
    with contextlib.ExitStack() as stack:
        neighbours = [stack.enter_context(socket.socket()) for _ in range(500)]
        for s in neighbours:
            s.bind(("127.0.0.1", 0))
        assert port not in {s.getsockname()[1] for s in neighbours}
        with socket.socket() as child:
            child.bind(("127.0.0.1", port))


def test_without_quiet_ports_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "ephemeral_low", lambda: QUIET_LOWEST)
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    assert port >= ephemeral_low()


def test_the_collectives_rendezvous_port_is_held_while_the_workers_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provokes the race that failed ``hw collectives`` with EADDRINUSE: a neighbour tries to take the
    rendezvous port the moment it is chosen, and keeps trying while the workers spawn. It never gets it (the
    parent serves the store on it), and the two gloo workers still report correct rows."""
    from seatrial.hw import collectives  # torch: imported only by the test that needs it

    refused: list[int] = []
    real = collectives.rendezvous_store

    def raced() -> object:
        store = real()
        for _ in range(3):
            with socket.socket() as neighbour, pytest.raises(OSError) as err:
                neighbour.bind(("127.0.0.1", store.port))
                neighbour.listen()
            refused.append(err.value.errno)
        return store

    monkeypatch.setattr(collectives, "rendezvous_store", raced)
    rows = collectives.run_collectives(2, "gloo", [4096])
    assert refused == [errno.EADDRINUSE] * 3
    assert [r["op"] for r in rows] == list(collectives.OPS) and all(r["correct"] for r in rows)
