"""The synthetic server as an M/D/4 queue, for the modules that test load against a known law."""

from __future__ import annotations

from collections.abc import Iterator

from seatrial.testing.server import start_process

#: 4 slots, 10 ms to the first token, 5 ms per token: a 20-token request holds a slot ~105 ms (~38 req/s)
SLOTS, TTFT_MS, ITL_MS, OUT = 4, 10.0, 5.0, 20


def md4_server() -> Iterator[str]:
    """The server's URL while it runs (a module fixture's body: ``yield from md4_server()``)."""
    proc, url = start_process(ITL_MS, TTFT_MS, slots=SLOTS)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
