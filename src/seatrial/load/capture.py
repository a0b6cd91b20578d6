"""Per-packet receive times of a server's TCP segments, so that token events keep their own times when
the client reads several of them at once.

A TCP socket keeps one receive time per read: when segments wait unread, the kernel coalesces them in
the receive queue and keeps the newest one's stamp (``tcp_try_coalesce``), so a client that falls a
whole gap behind a stream reads earlier tokens as if they came with the last. A packet socket
(``AF_PACKET``, as tcpdump uses) gets its own copy of each segment as the network stack receives it,
stamped then (the same ``skb`` stamp the TCP socket would have given) and queued one by one: nothing
merges while the client is busy, and a client that drains it late loses no time. A classic BPF filter
keeps only inbound IPv4 TCP segments from the server's port, cut to their headers.

``PacketStamps`` maps each connection's received bytes (offsets from its SYN-ACK's sequence number) to
the arrival time of the segment that brought them. It needs CAP_NET_RAW (root); where the kernel
refuses it, or for IPv6, the client keeps the TCP socket's per-read stamps (``stamps: kernel``) and a
level whose reads merged says that its token times are not exact.
"""

from __future__ import annotations

import contextlib
import ctypes
import socket
import struct
from collections import defaultdict

_ETH_P_IP = 0x0800
_SO_ATTACH_FILTER = 26
_SO_RCVBUFFORCE = 33
_SO_TIMESTAMPNS = 35
_SOL_PACKET = 263
_PACKET_STATISTICS = 6
_SNAP = 128  # IPv4 + TCP headers with options fit
_BUFFER = 64 << 20
_SYN = 0x02
_KEPT = 100_000  # segments kept per connection until taken
_ANC = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("qq")
_IP = struct.Struct("!BxH8xII")  # version/ihl, total length, src, dst
_TCP = struct.Struct("!HHIIB")  # src port, dst port, seq, ack, data offset


def _filter(host: int, port: int) -> bytes:
    """cBPF: inbound (not PACKET_OUTGOING) IPv4 TCP from ``host``:``port``; keep the first ``_SNAP`` bytes."""
    prog = [
        (0x20, 0, 0, 0xFFFFF000 + 4),  # ld  pkttype (SKF_AD_OFF + SKF_AD_PKTTYPE)
        (0x15, 8, 0, 4),  # jeq #PACKET_OUTGOING -> drop
        (0x20, 0, 0, 12),  # ld [12]: source address
        (0x15, 0, 6, host),  # jeq #host, else drop
        (0x30, 0, 0, 9),  # ldb [9]: IP protocol
        (0x15, 0, 4, 6),  # jeq #TCP, else drop
        (0xB1, 0, 0, 0),  # ldxb 4*([0]&0xf): IP header length
        (0x48, 0, 0, 0),  # ldh [x+0]: TCP source port
        (0x15, 0, 1, port),  # jeq #port, else drop
        (0x06, 0, 0, _SNAP),  # ret #snap
        (0x06, 0, 0, 0),  # ret #0
    ]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


def _stamp_ns(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return int(sec * 1_000_000_000 + nsec)
    return None


class PacketStamps:
    """Arrival times (CLOCK_REALTIME ns) of the data segments a server sends from ``port``, per client
    port, by the stream offset their last byte ends at."""

    def __init__(self, host: str, port: int) -> None:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(_ETH_P_IP))
        prog = _filter(struct.unpack("!I", socket.inet_aton(host))[0], port)
        buf = ctypes.create_string_buffer(prog, len(prog))  # the kernel copies it during setsockopt
        try:
            fprog = struct.pack("HL", len(prog) // 8, ctypes.addressof(buf))  # struct sock_fprog
            sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            try:
                sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, _BUFFER)
            except OSError:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _BUFFER)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self._isn: dict[int, int] = {}
        # (end offset, ns, start offset) of each data segment, by client port
        self._segments: defaultdict[int, list[tuple[int, int, int]]] = defaultdict(list)

    def drain(self) -> None:
        """Read every queued segment copy (non-blocking)."""
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(_SNAP, _ANC)
            except (BlockingIOError, InterruptedError):
                return
            self._add(data, _stamp_ns(anc))

    def _add(self, data: bytes, at: int | None) -> None:
        if at is None or len(data) < 20:
            return
        ver_ihl, total, _, _ = _IP.unpack_from(data)
        ihl = (ver_ihl & 0x0F) * 4
        if len(data) < ihl + 14:
            return
        _, client_port, seq, _, offset = _TCP.unpack_from(data, ihl)
        flags = data[ihl + 13]
        if flags & _SYN:
            self._isn[client_port] = seq
            self._segments.pop(client_port, None)
            return
        payload = total - ihl - (offset >> 4) * 4
        isn = self._isn.get(client_port)
        if payload <= 0 or isn is None:
            return
        end = (seq + payload - isn - 1) % (1 << 32)  # offsets past 4 GiB on one connection wrap: not met
        segs = self._segments[client_port]
        if not segs or end > segs[-1][0]:
            segs.append((end, at, end - payload))
            if len(segs) > _KEPT:  # a connection nobody takes stamps of (another session's)
                del segs[: _KEPT // 2]
        # a retransmission or reordering: the bytes arrived with the first copy (kept)

    def known(self, client_port: int) -> bool:
        return client_port in self._isn

    def take(self, client_port: int, start: int, end: int) -> list[tuple[int, int, int]]:
        """The segments whose last byte lies in (start, end] (offsets), oldest first; older ones are
        forgotten."""
        segs = self._segments.get(client_port)
        if not segs:
            return []
        i = 0
        while i < len(segs) and segs[i][0] <= start:
            i += 1
        j = i
        while j < len(segs) and segs[j][0] <= end:
            j += 1
        out = segs[i:j]
        del segs[:j]
        return out

    def dropped(self) -> int:
        """Segment copies the kernel dropped because the buffer was full (since the last call)."""
        with contextlib.suppress(OSError):
            raw = self.sock.getsockopt(_SOL_PACKET, _PACKET_STATISTICS, 8)
            return int(struct.unpack("II", raw)[1])
        return 0

    def close(self) -> None:
        self.sock.close()


_CAPTURES: dict[tuple[str, int], PacketStamps | None] = {}


def capture_for(host: str, port: int) -> PacketStamps | None:
    """The process's packet stamps for a server's IPv4 address and port, opened on first use; None
    where the kernel refuses a packet socket (no CAP_NET_RAW) or the address is not IPv4."""
    key = (host, port)
    if key not in _CAPTURES:
        try:
            _CAPTURES[key] = PacketStamps(host, port)
        except (OSError, AttributeError, ValueError):
            _CAPTURES[key] = None
    return _CAPTURES[key]
