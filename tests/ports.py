"""A loopback port that stays free while the session runs: ``seatrial.server.process.free_port`` chooses it
below the kernel's ephemeral range, so no ``bind(0)`` and no outbound connection can be handed it before its
user binds it (the tests' name for it)."""

from __future__ import annotations

from seatrial.server.process import free_port

quiet_port = free_port
