"""Pooled keep-alive connections that the server closed, told apart from requests the server dropped.

A keep-alive connection can be closed by the server at any moment between two requests: cpp-httplib
(llama-server) closes every connection right after a streamed response, although the response says
``Keep-Alive: timeout=5, max=100`` (its chunked content provider returns false at the end, which
cpp-httplib takes as a cancelled write); uvicorn after 5 s idle. A client that sends its next request
on such a connection gets "Server disconnected" or "Connection reset by peer", through no fault of the
server. Two guards, neither of which can hide a request the server received:

- before a pooled connection is used, the kernel is asked whether the server already closed it
  (``StampedSocket.peer_closed``: a FIN or RST is queued); such a connection is dropped and another
  one taken. Nothing was sent on it.
- the first write of a request on a pooled connection asks the kernel again (the server may have
  closed it while the client was busy between taking and writing); a closed one refuses the write.
- a request that failed on a reused connection is sent again, once, on a new connection, only when the
  server provably never read it, and not one byte of a response had arrived: the write was refused as
  above, or the kernel reported a reset (RST) from the server, or the server's FIN did not acknowledge
  the request (it was sent before the request arrived). TCP resets a connection whose application
  closed it with received data still unread, or that receives data after it was closed; a server that
  read the request and then failed (crashed, dropped it) closes with a FIN that acknowledges it, which
  is not retried. cpp-httplib closes with ``shutdown`` and then ``close``: its FIN acknowledges a request
  the kernel took in, and the reset for it unread comes only at the close, later where the server's
  thread lost its CPU between the two (seen on a 2-core host: a request lost to "Server disconnected").
  After a FIN that acknowledged an unanswered request on a reused connection, the client waits up to
  ``RESET_WAIT_S`` for that reset, on a duplicate of the socket it keeps open for it. A failure on a
  fresh connection, a clean close (FIN) with no reset within that wait, and any failure after the first
  response byte stay failures.
- a server that closes its connections right after their responses (a pooled one found closed within
  ``CLOSES_AFTER_RESPONSE_S`` of its last bytes) gets a new connection for every request from then on:
  reusing them only races their close, and cpp-httplib can take in the next request and close with a
  FIN and no reset at all (seen on llama-server: 2 of 24 requests lost to "Server disconnected" after a
  2 s wait for a reset that never came).
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import socket
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from seatrial.load.stamps import StampedSocket, socket_of

#: a pooled connection the server closed this soon after its last bytes: the server closes each connection
#: after its response (cpp-httplib after a stream), far sooner than any idle keep-alive timeout (5 s for
#: uvicorn and cpp-httplib); from then on the connector opens a new connection for every request
CLOSES_AFTER_RESPONSE_S = 1.0
MAX_ATTEMPTS = 2  # sends of one request: a resend needs the proof above and goes out on a new connection
RESET_WAIT_S = 0.25  # for the reset after a FIN (above): only on a failed request
_RESET_POLL_S = 0.005
_TCP_CLOSE = 7  # tcpi_state after a reset in CLOSE_WAIT (our side never closed: the socket is held)


@dataclass
class Attempt:
    """One send of a request: the pooled connection it went out on (None: a fresh connection)."""

    sock: StampedSocket | None = None
    fresh: bool = False  # a resend: it goes out on a new connection, whose failure is final
    received_at_start: int = 0
    stale_dropped: int = 0  # pooled connections found closed by the server and not used

    async def settle(self) -> None:
        """Waits for the reset that may follow a FIN on this attempt's connection (the module's docstring)
        and lets the connection go; at once where nothing is held."""
        sock = self.sock
        held = sock.held if sock is not None else None
        if sock is None or held is None:
            return
        sock.held = None
        try:
            deadline = time.monotonic() + RESET_WAIT_S
            while not _was_reset(held) and time.monotonic() < deadline:
                await asyncio.sleep(_RESET_POLL_S)
            sock.reset = sock.reset or _was_reset(held)
        finally:
            held.close()

    def never_read(self) -> bool:
        """The server provably did not read this attempt's request (see the module's docstring)."""
        sock = self.sock
        if sock is None or sock.received != self.received_at_start:
            return False
        return sock.closed_unsent or sock.reset


def _was_reset(held: socket.socket) -> bool:
    try:
        err = held.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        state = held.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
    except OSError:
        return False
    return err in (errno.ECONNRESET, errno.EPIPE) or state == _TCP_CLOSE


_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("seatrial_attempt", default=None)


def begin_attempt(fresh: bool = False) -> tuple[Attempt, contextvars.Token[Attempt | None]]:
    attempt = Attempt(fresh=fresh)
    return attempt, _ATTEMPT.set(attempt)


def end_attempt(token: contextvars.Token[Attempt | None]) -> None:
    _ATTEMPT.reset(token)


class GuardedConnector(aiohttp.TCPConnector):
    """A TCPConnector that never hands out a pooled connection the server has already closed, and notes
    the pooled connection each request went out on (for :meth:`Attempt.never_read`)."""

    fresh_only = False  # the server closes each connection after its response: none is reused

    async def _get(self, key: Any, traces: Any) -> Any:  # aiohttp.connector.Connection | None
        attempt = _ATTEMPT.get()
        if (attempt is not None and attempt.fresh) or self.fresh_only:
            return None  # a resend never takes a pooled connection: the connector opens a new one
        while True:
            conn = await super()._get(key, traces)
            if conn is None:
                return None
            sock = socket_of(conn.transport)
            if sock is not None and sock.peer_closed():
                conn.close()  # the server closed it: nothing was sent
                if attempt is not None:
                    attempt.stale_dropped += 1
                if self.closed_soon(sock):
                    return None
                continue
            if sock is not None:
                sock.check_next_send = sock.reused = True
            if attempt is not None and sock is not None:
                attempt.sock, attempt.received_at_start = sock, sock.received
            return conn

    def closed_soon(self, sock: StampedSocket | None) -> bool:
        """Whether the server closed ``sock`` right after its last response; then no connection is reused
        from now on (that would only race their close)."""
        if sock is not None and time.monotonic() - sock.last_read_s < CLOSES_AFTER_RESPONSE_S:
            self.fresh_only = True
        return self.fresh_only
