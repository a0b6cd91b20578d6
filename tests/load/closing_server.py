"""A streaming server that handles keep-alive as llama-server's cpp-httplib does (0.58, vendored by llama.cpp):
one thread per connection, responses announce ``Keep-Alive: timeout=5, max=100``, but a streamed
(chunked) response ends with its content provider returning false, which cpp-httplib takes as a
cancelled write: after the terminating chunk it closes the connection. A client that pools the
connection and sends its next request on it before it sees the FIN gets "Server disconnected".

``close_delay_s`` holds the close back after the last chunk (a server thread that lost its CPU), so
that the next request reaches the socket before it closes (the kernel then answers with RST: the
request was never read). ``shutdown_gap_s``: cpp-httplib closes with ``shutdown(SHUT_RDWR)`` and then
``close()``; a thread that loses its CPU between the two has sent a FIN that acknowledges the next
request (the kernel took it in), and the reset for the unread request comes only at ``close()``, this
long after. ``drop_every``: every N-th request is dropped after ``drop_after`` events,
mid-stream, with the connection closed; ``hangup_every``: every N-th request is read and then the
connection closed without an answer. Both are real server failures. ``ids`` lists the ``X-Request-Id``
of every request the server read, in order.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass

import orjson


@dataclass
class ClosingConfig:
    tokens: int = 4
    close_delay_s: float = 0.0
    drop_every: int = 0
    drop_after: int = 2
    hangup_every: int = 0
    shutdown_gap_s: float = 0.0
    keep_alive: bool = False  # True: a well-behaved server that keeps the connection open


class ClosingServer:
    def __init__(self, cfg: ClosingConfig) -> None:
        self.cfg = cfg
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = 0  # requests whose headers were read
        self.ids: list[str] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = False

    def __enter__(self) -> ClosingServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop = True
        self.sock.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            with contextlib.suppress(ConnectionResetError):  # a client may reset a connection it gave up
                self._requests(conn)
        finally:
            if self.cfg.shutdown_gap_s:
                with contextlib.suppress(OSError):  # the client may have reset it already
                    conn.shutdown(socket.SHUT_RDWR)
                time.sleep(self.cfg.shutdown_gap_s)
            conn.close()

    def _requests(self, conn: socket.socket) -> None:
        buf = b""
        while True:
            head, buf = _read_request(conn, buf)
            if head is None:
                return
            with self._lock:
                self.requests += 1
                n = self.requests
                self.ids.append(_request_id(head))
            if self.cfg.hangup_every and n % self.cfg.hangup_every == 0:
                return
            dropped = self.cfg.drop_every and n % self.cfg.drop_every == 0
            self._stream(conn, n, dropped)
            if dropped or not self.cfg.keep_alive:
                time.sleep(self.cfg.close_delay_s)
                return

    def _stream(self, conn: socket.socket, n: int, dropped: bool) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Keep-Alive: timeout=5, max=100\r\nServer: llama.cpp\r\n\r\n"
        )
        for i in range(self.cfg.tokens):
            if dropped and i == self.cfg.drop_after:
                return
            usage = {"completion_tokens": i + 1, "prompt_tokens": 4}
            event = {"id": f"r{n}", "choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}],
                     "usage": usage}  # fmt: skip
            _chunk(conn, b"data: " + orjson.dumps(event) + b"\n\n")
        _chunk(conn, b"data: [DONE]\n\n")
        conn.sendall(b"0\r\n\r\n")


def _chunk(conn: socket.socket, data: bytes) -> None:
    conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))


def _request_id(head: bytes) -> str:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-request-id":
            return value.strip().decode()
    return ""


def _read_request(conn: socket.socket, buf: bytes) -> tuple[bytes | None, bytes]:
    """One request's head (its body read by Content-Length), and what followed it."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None, b""
        rest += data
    return head, rest[length:]
