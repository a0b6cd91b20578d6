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
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
import time
import weakref
from typing import Any

_SO_TIMESTAMPNS = 35  # asm-generic/socket.h; Python's socket module does not name it
_KERNEL_STAMPS = sys.platform == "linux" and platform.machine() in {"x86_64", "aarch64", "riscv64"}
_ANC_BYTES = socket.CMSG_SPACE(16)  # one struct timespec
_TIMESPEC = struct.Struct("qq")
_REFRESH_NS = 1_000_000_000


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []
        self.kernel = False
        if _KERNEL_STAMPS:
            try:
                self.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                self.kernel = True
            except OSError:
                pass
        _SOCKETS[self.fileno()] = self

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        if not self.kernel:
            data = super().recv(bufsize, flags)
            if data:
                self.reads.append(time.perf_counter_ns())
            return data
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANC_BYTES, flags)
        if data:
            self.reads.append(_arrival_ns(ancillary))
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        if not self.kernel:
            n = super().recv_into(buffer, nbytes, flags)
            if n:
                self.reads.append(time.perf_counter_ns())
            return n
        view = memoryview(buffer)
        n, ancillary, _, _ = self.recvmsg_into([view[:nbytes] if nbytes else view], _ANC_BYTES, flags)
        if n:
            self.reads.append(_arrival_ns(ancillary))
        return n

    def take(self) -> list[int]:
        """The arrival times of the reads since the last ``take``, oldest first."""
        reads, self.reads = self.reads, []
        return reads


def _arrival_ns(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return _CLOCK.to_monotonic(sec * 1_000_000_000 + nsec)
    return time.perf_counter_ns()


def stamped_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """aiohttp's ``socket_factory``: a StampedSocket for the address family aiohttp resolved."""
    family, kind, proto, *_ = addr_info
    return StampedSocket(family, kind, proto)


def socket_of(transport: Any) -> StampedSocket | None:
    """The StampedSocket under an asyncio transport, if it is one."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return None
    found = _SOCKETS.get(sock.fileno())
    return found if found is not None and found.fileno() == sock.fileno() else None
