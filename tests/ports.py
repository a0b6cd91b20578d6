"""A loopback port that stays free while the session runs: chosen below the kernel's ephemeral range, so
no ``bind(0)`` (``free_port``) and no outbound connection can be handed it before its user binds it."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from seatrial.server.process import free_port

RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 20000


def ephemeral_low() -> int:
    try:
        return int(RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def quiet_port(tries: int = 64) -> int:
    """A port in [20000, the ephemeral range's start) that binds now; ``free_port()`` where there is none."""
    high = ephemeral_low() - 1
    for _ in range(tries if high > LOWEST else 0):
        port = random.randint(LOWEST, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()
