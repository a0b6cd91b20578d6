"""Kernel receive times of streamed bytes, so that a busy client still times each token truly.

A client that stamps a chunk when its coroutine gets it adds its own delay to every ITL: with 256
streams whose events arrive together, the last one waits for the other 255 to be handled. With
``SO_TIMESTAMPNS`` the kernel stamps each TCP segment as it arrives, and ``recvmsg`` returns the stamp
of the newest segment a read consumed (unread segments are merged, keeping the newest stamp). A read
made before the stream's next event arrives therefore stamps exactly that event, however many other
streams the client is busy with. When the client falls a whole ITL behind one stream, the kernel
merges events and they share one stamp; ``take`` callers count those as merged events.

The kernel stamp is CLOCK_REALTIME; it is moved onto ``time.perf_counter_ns`` (CLOCK_MONOTONIC)
with an offset sampled in the narrowest of several (monotonic, realtime, monotonic) brackets and
sampled again every second. Where the option or its ancillary data is missing (not Linux, a
sandbox), reads are stamped in user space when they return, still before any parsing.

The socket also keeps what proves that a request sent on it was never read by the server (see
:mod:`seatrial.load.reuse`): the bytes it received, and whether the kernel reported a reset (RST) from
the peer; ``peer_closed`` asks the kernel, without reading, whether the peer already closed it.
"""

from __future__ import annotations

import errno
import os
import platform
import socket
import struct
import sys
import time
import weakref
from typing import Any

from seatrial.load.capture import PacketStamps, capture_for

_SO_TIMESTAMPNS = 35  # asm-generic/socket.h; Python's socket module does not name it
_KERNEL_STAMPS = sys.platform == "linux" and platform.machine() in {"x86_64", "aarch64", "riscv64"}
_ANC_BYTES = socket.CMSG_SPACE(16)  # one struct timespec
_TIMESPEC = struct.Struct("qq")
_REFRESH_NS = 1_000_000_000
_TCP_INFO = struct.Struct("I")  # struct tcp_info: 8 one-byte fields, then rto, ato, snd_mss, rcv_mss, ...
_UNACKED_AT = 24  # ... tcpi_unacked: segments sent and not acknowledged


class _ClockOffset:
    """realtime − monotonic in ns, sampled again when the last sample is a second old."""

    def __init__(self) -> None:
        self.offset_ns = 0
        self.sampled_at_ns = -_REFRESH_NS

    def to_monotonic(self, realtime_ns: int) -> int:
        if realtime_ns - self.sampled_at_ns > _REFRESH_NS:
            self.offset_ns, self.sampled_at_ns = _sample_offset_ns(), time.time_ns()
        return realtime_ns - self.offset_ns


def _sample_offset_ns(samples: int = 32) -> int:
    best_width, best = None, 0
    for _ in range(samples):
        a = time.perf_counter_ns()
        r = time.time_ns()
        b = time.perf_counter_ns()
        if best_width is None or b - a < best_width:
            best_width, best = b - a, r - (a + b) // 2
    return best


_CLOCK = _ClockOffset()
_SOCKETS: weakref.WeakValueDictionary[int, StampedSocket] = weakref.WeakValueDictionary()


class StampedSocket(socket.socket):
    """A socket whose reads keep their arrival time (``perf_counter_ns``) until ``take`` claims them."""

    def __init__(
        self, *args: Any, kernel: bool = True, packets: PacketStamps | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []
        self.read_ends: list[int] = []  # the stream offset each read ended at (bytes received by then)
        self.packets = packets  # per-segment stamps of the server's port (load.capture), where permitted
        self._local_port: int | None = None
        self.event_ends: list[int] = []  # with packets: stream offsets where data lines ended
        self.missed = 0  # ... events whose segment the capture missed (timed per read)
        self._line_head = b""  # the start of a line a read cut off
        self.received = 0  # bytes read so far
        self.last_read_s = time.monotonic()  # when bytes last came (time.monotonic)
        # the peer reset (RST) the connection, or closed it (FIN) before our data reached it (unacked)
        self.reset = False
        self.check_next_send = False  # a reused connection: see whether the peer closed it before sending
        self.closed_unsent = False  # ... it had: the send was refused, no byte of it left
        self.reused = False  # a pooled connection took a request (load.reuse)
        self.unanswered = False  # bytes were sent and none received since
        self.held: socket.socket | None = None  # see _note_eof
        self.kernel = False
        if kernel and _KERNEL_STAMPS:
            try:
                self.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                self.kernel = True
            except OSError:
                pass
        _SOCKETS[self.fileno()] = self

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        try:
            if not self.kernel:
                data = super().recv(bufsize, flags)
                at = time.perf_counter_ns()
            else:
                data, ancillary, _, _ = self.recvmsg(bufsize, _ANC_BYTES, flags)
                at = _arrival_ns(ancillary) if data else 0
        except OSError as exc:
            self._note_reset(exc)
            raise
        if data:
            self._got(data, at)
        else:
            self._note_eof()
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        try:
            if not self.kernel:
                n = super().recv_into(buffer, nbytes, flags)
                at = time.perf_counter_ns()
            else:
                view = memoryview(buffer)
                n, ancillary, _, _ = self.recvmsg_into([view[:nbytes] if nbytes else view], _ANC_BYTES, flags)
                at = _arrival_ns(ancillary) if n else 0
        except OSError as exc:
            self._note_reset(exc)
            raise
        if n:
            self._got(bytes(memoryview(buffer)[:n]) if self.packets is not None else b"", at, n)
        elif nbytes or len(buffer):
            self._note_eof()
        return n

    def send(self, data: Any, flags: int = 0) -> int:
        if self.check_next_send:
            self.check_next_send = False
            if self.peer_closed():
                self.closed_unsent = True
                raise ConnectionResetError(
                    errno.ECONNRESET, "the server closed the connection before the request"
                )
        try:
            sent = super().send(data, flags)
        except OSError as exc:
            self._note_reset(exc)
            raise
        self.unanswered = self.unanswered or sent > 0
        return sent

    def _got(self, data: bytes, at: int, n: int = 0) -> None:
        self.unanswered = False
        self.last_read_s = time.monotonic()
        self.reads.append(at)
        if self.packets is not None:
            self._scan(data)
        self.received += n or len(data)
        self.read_ends.append(self.received)

    def _scan(self, data: bytes) -> None:
        """Note the stream offset where each ``data:`` line ends (its ``\n``): an SSE event's last byte.
        Chunked framing lines (``1f4\r``) and header lines never start with ``data:``."""
        pos = 0
        while (nl := data.find(b"\n", pos)) >= 0:
            head = (self._line_head + data[pos : pos + 5])[:5] if self._line_head else data[pos : pos + 5]
            if head == b"data:":
                self.event_ends.append(self.received + nl + 1)
            self._line_head = b""
            pos = nl + 1
        if pos < len(data) and len(self._line_head) < 5:
            self._line_head = (self._line_head + data[pos : pos + 5])[:5]

    def _note_reset(self, exc: OSError) -> None:
        if exc.errno in (errno.ECONNRESET, errno.EPIPE):
            self.reset = True

    def _note_eof(self) -> None:
        # The peer closed (FIN). A reset that came after it reads as an end of stream too: the kernel
        # keeps its error (EPIPE: reset in CLOSE_WAIT) until asked. Where the reset is still on its way,
        # the FIN itself tells: sent after the peer read our data it acknowledges it; sent before our
        # data arrived it does not, and our data stays unacknowledged (the peer will reset it).
        try:
            err = self.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            info = self.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size + _UNACKED_AT)
        except OSError:
            return
        unacked = _TCP_INFO.unpack_from(info, _UNACKED_AT)[0] if len(info) >= _UNACKED_AT + 4 else 0
        if err in (errno.ECONNRESET, errno.EPIPE) or unacked:
            self.reset = True
        elif self.reused and self.unanswered and self.held is None:
            # A FIN that acknowledged a request nothing answered: the peer took it in, but a server that
            # closes with shutdown() and then close() (cpp-httplib) resets it unread only at the close.
            # The connection is held open past the client's own close, for load.reuse to wait for that.
            self.held = socket.socket(fileno=os.dup(self.fileno()))

    def peer_closed(self) -> bool:
        """Whether the peer has closed (FIN) or reset the connection, asked of the kernel without reading."""
        try:
            return super().recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            self._note_reset(exc)
            return True

    @property
    def per_segment(self) -> bool:
        """Whether ``take`` gives each received TCP segment its own time (a packet capture saw this
        connection open), not only each read."""
        if self.packets is None:
            return False
        if not self.packets.known(self.local_port()):
            self.packets.drain()
        return self.packets.known(self.local_port())

    def local_port(self) -> int:
        if self._local_port is None:
            try:
                self._local_port = int(self.getsockname()[1])
            except (OSError, IndexError, TypeError):
                self._local_port = -1
        return self._local_port

    def take(self) -> list[int]:
        """The arrival times of the reads since the last ``take``, oldest first."""
        reads, self.reads, self.read_ends = self.reads, [], []
        return reads

    def take_events(self) -> list[int]:
        """With per-segment stamps: the arrival time of each ``data:`` line that ended in the reads since
        the last call, oldest first: the segment that brought its last byte (the read's own stamp where
        the capture missed it)."""
        reads, ends, events = self.reads, self.read_ends, self.event_ends
        self.reads, self.read_ends, self.event_ends = [], [], []
        if not events:
            return []
        assert self.packets is not None
        self.packets.drain()
        segs = self.packets.take(self.local_port(), -1, ends[-1])
        out: list[int] = []
        i = j = 0
        for end in events:
            while i < len(segs) and segs[i][0] < end:
                i += 1
            while j < len(ends) - 1 and ends[j] < end:
                j += 1
            if i < len(segs) and segs[i][2] < end:  # the segment that holds the event's last byte
                out.append(_CLOCK.to_monotonic(segs[i][1]))
            else:  # the capture missed it (its buffer was full): the read's time, as without packets
                out.append(reads[j])
                self.missed += 1
        return out


def _arrival_ns(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return _CLOCK.to_monotonic(sec * 1_000_000_000 + nsec)
    return time.perf_counter_ns()


def stamped_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """aiohttp's ``socket_factory``: a StampedSocket for the address family aiohttp resolved, with
    per-segment stamps of the server's port where the kernel permits a packet capture (IPv4, root)."""
    family, kind, proto, _, address = addr_info
    packets = None
    if _KERNEL_STAMPS and family == socket.AF_INET:
        packets = capture_for(str(address[0]), int(address[1]))
    return StampedSocket(family, kind, proto, packets=packets)


def read_stamped_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """``stamped_socket`` with kernel stamps per read only (no packet capture)."""
    family, kind, proto, *_ = addr_info
    return StampedSocket(family, kind, proto)


def user_stamped_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """``stamped_socket`` without kernel stamps: reads are stamped in user space."""
    family, kind, proto, *_ = addr_info
    return StampedSocket(family, kind, proto, kernel=False)


def socket_of(transport: Any) -> StampedSocket | None:
    """The StampedSocket under an asyncio transport, if it is one."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return None
    found = _SOCKETS.get(sock.fileno())
    return found if found is not None and found.fileno() == sock.fileno() else None
