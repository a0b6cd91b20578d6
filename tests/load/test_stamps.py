"""Chunk times are the kernel's arrival times: a busy client still measures each gap truly."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest

from seatrial.load.capture import capture_for
from seatrial.load.client import Endpoint, new_http, send
from seatrial.load.metrics import client_timing
from seatrial.load.records import RequestRecord
from seatrial.load.stamps import StampedSocket
from seatrial.load.workloads import RequestSpec
from seatrial.testing.server import start_process

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="kernel receive stamps are Linux-only")


def _pair() -> tuple[StampedSocket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = StampedSocket(socket.AF_INET, socket.SOCK_STREAM)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, server


def test_a_late_read_is_stamped_with_the_arrival_of_its_newest_bytes() -> None:
    client, server = _pair()
    with client, server:
        assert client.kernel
        sent_a = time.perf_counter_ns()
        server.sendall(b"a")
        assert client.recv(64) == b"a"
        server.sendall(b"b")
        time.sleep(0.08)  # the client is busy; "c" arrives 80 ms after "b"
        sent_c = time.perf_counter_ns()
        server.sendall(b"c")
        time.sleep(0.05)
        assert client.recv(64) == b"bc"
        read_at = time.perf_counter_ns()
        first, merged = client.take()
    assert 0 <= first - sent_a < 5_000_000
    assert 0 <= merged - sent_c < 5_000_000  # the newest segment's arrival, not the first's
    assert read_at - merged > 40_000_000  # the read came 50 ms later; the stamp did not move with it


@contextlib.contextmanager
def _server(itl_ms: int, ttft_ms: int = 5) -> Iterator[str]:
    proc, url = start_process(itl_ms, ttft_ms)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _stamps(url: str) -> dict[str, list[int]]:
    with urllib.request.urlopen(f"{url}/stamps", timeout=10) as resp:
        data: dict[str, list[int]] = json.loads(resp.read())
        return data


async def _streams(
    url: str, n: int, block_s: float, every_s: float, kernel: bool = True, packets: bool = False
) -> list[RequestRecord]:
    """``n`` streams while a task blocks the client's loop for ``block_s`` every ``every_s``."""
    stop = asyncio.Event()

    async def hog() -> None:
        while not stop.is_set():
            time.sleep(block_s)  # the loop can do nothing else meanwhile
            await asyncio.sleep(every_s)

    ep = Endpoint(url, "synthetic", "completions", {})
    spec = RequestSpec(prompt="w1 w2 w3 w4", output_len=25)
    async with new_http(60, 30, kernel_stamps=kernel, packet_stamps=packets) as http:
        task = asyncio.create_task(hog())
        records = await asyncio.gather(
            *(send(http, ep, spec, RequestRecord(f"busy-{i}", "measure", n)) for i in range(n))
        )
        stop.set()
        await task
    return list(records)


def _itl_errors_ms(records: list[RequestRecord], stamps: dict[str, list[int]]) -> np.ndarray:
    errors = []
    for r in records:
        true_ms = np.diff(np.asarray(stamps[r.request_id], dtype=np.float64)) / 1e6
        errors.extend(np.abs(np.asarray(r.itl_ms) - true_ms[: len(r.itl_ms)]))
    return np.asarray(errors)


def test_busy_client_times_each_gap_by_arrival() -> None:
    with _server(itl_ms=30) as url:
        records = asyncio.run(_streams(url, 4, block_s=0.012, every_s=0.005))
        stamps = _stamps(url)
    assert all(r.ok and r.stamps == "kernel" and len(r.itl_ms) == 24 for r in records), records[0]
    assert max(r.read_lag_ms_max or 0.0 for r in records) > 5.0  # reads were handled late...
    errors = _itl_errors_ms(records, stamps)
    # ...but timed by arrival: 95% of the 92 gaps within 2 ms of the server's own stamps (a stamp taken when
    # the busy loop reads puts most gaps up to 12 ms off; the next test). Not p99, which of 92 gaps is the
    # second largest: on the 2-core CI host, beside the session engine, two gaps once came 2.16 ms off.
    assert float(np.percentile(errors, 95)) < 2.0, sorted(errors)[-5:]
    assert sum(r.merged_events for r in records) == 0


def test_user_stamps_carry_the_busy_clients_delay() -> None:
    """``--stamps user`` (vLLM's client's way) on the same blocked loop: the gaps take the client's delay."""
    with _server(itl_ms=30) as url:
        records = asyncio.run(_streams(url, 4, block_s=0.012, every_s=0.005, kernel=False))
        stamps = _stamps(url)
    assert all(r.ok and r.stamps == "user" for r in records)
    assert float(np.percentile(_itl_errors_ms(records, stamps), 99)) > 5.0


def test_a_client_a_whole_gap_behind_is_flagged() -> None:
    with _server(itl_ms=10) as url:
        records = asyncio.run(_streams(url, 2, block_s=0.045, every_s=0.005))
    assert all(r.ok for r in records)
    merged = sum(r.merged_events for r in records)
    assert merged > 0.05 * sum(r.chunks for r in records)
    timing = client_timing(records, max_lag_ms=50.0)
    assert timing["stamps"] == "kernel" and timing["merged_events"] == merged
    assert timing["read_lag_ms_p99"] > 1.0
    assert timing["note"].startswith(
        f"{merged} of {sum(r.chunks for r in records)} token events arrived merged"
    )


def _stalled_response(packets: bool) -> tuple[RequestRecord, list[int]]:
    async def run(url: str) -> RequestRecord:
        async def hog() -> None:
            await asyncio.sleep(0.03)  # the request and its headers have gone through
            time.sleep(0.5)  # the tokens (150 ms TTFT, 2 ms apart) all arrive meanwhile

        ep = Endpoint(url, "synthetic", "completions", {})
        async with new_http(60, 30, packet_stamps=packets) as http:
            task = asyncio.create_task(hog())
            rec = await send(
                http, ep, RequestSpec(prompt="w1 w2", output_len=8), RequestRecord("s", "measure", 1)
            )
            await task
        return rec

    with _server(itl_ms=2, ttft_ms=150) as url:
        rec = asyncio.run(run(url))
        return rec, _stamps(url)["s"]


def test_a_response_that_came_while_the_client_was_stalled_is_timed_by_its_own_read() -> None:
    """Headers at once, then every token while the client's loop was blocked: the tokens share the
    arrival of the read that brought them (not the earlier headers' read), and are flagged merged."""
    rec, sent = _stalled_response(packets=False)
    first_sent = sent[0]
    assert rec.ok and rec.stamps == "kernel" and rec.chunks == 8
    assert rec.ttft_ms is not None and rec.ttft_ms >= 150  # the headers came within a few ms
    assert rec.merged_events == 7 and rec.itl_ms == [0.0] * 7
    assert rec.send_ns + rec.ttft_ms * 1e6 >= first_sent


def _whole_response_server(delay_s: float) -> tuple[str, socket.socket]:
    """A server that answers each request after ``delay_s`` with headers and the whole stream in one send."""
    listener = socket.create_server(("127.0.0.1", 0))
    events = (
        b"".join(
            b'data: {"id":"w","choices":[{"index":0,"text":" t","finish_reason":null}]}\n\n' for _ in range(5)
        )
        + b"data: [DONE]\n\n"
    )
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(events), events)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                while b"\r\n\r\n" not in conn.recv(65536):
                    pass
                time.sleep(delay_s)
                conn.sendall(head + body)
                time.sleep(1)

    threading.Thread(target=serve, daemon=True).start()
    host, port = listener.getsockname()
    return f"http://{host}:{port}", listener


@pytest.mark.parametrize("packets", [False, True])
def test_a_response_that_arrived_whole_keeps_its_kernel_stamp(packets: bool) -> None:
    """aiohttp releases the connection before the client reads a body that arrived whole; the stamp
    still comes from the kernel, and the merged tokens are flagged: the server sent them together, in
    one segment, so packet stamps merge them too."""
    if packets:
        _need_packets()
    url, listener = _whole_response_server(0.1)

    async def run() -> RequestRecord:
        ep = Endpoint(url, "m", "completions", {})
        async with new_http(60, 30, packet_stamps=packets) as http:
            return await send(
                http, ep, RequestSpec(prompt="p", output_len=5), RequestRecord("w", "measure", 1)
            )

    with listener:
        rec = asyncio.run(run())
    assert rec.ok and rec.stamps == ("packet" if packets else "kernel") and rec.chunks == 5
    assert rec.merged_events == 4 and rec.ttft_ms is not None and rec.ttft_ms >= 100


def _need_packets() -> None:
    if capture_for("127.0.0.1", 9) is None:
        pytest.skip("no packet capture here (needs CAP_NET_RAW): per-segment stamps untested")


def test_packet_stamps_keep_each_token_of_a_stalled_response_apart() -> None:
    """The stalled client above, with per-segment stamps: the 8 tokens, read at once, keep the times
    they arrived 2 ms apart (within 1 ms of the server's own send stamps), none merged."""
    _need_packets()
    rec, sent = _stalled_response(packets=True)
    assert rec.ok and rec.stamps == "packet" and rec.chunks == 8 and rec.merged_events == 0
    true_ms = np.diff(np.asarray(sent, dtype=np.float64))[:7] / 1e6
    assert float(np.abs(np.asarray(rec.itl_ms) - true_ms).max()) < 1.0, (rec.itl_ms, true_ms)


def test_packet_stamps_time_a_client_a_whole_gap_behind() -> None:
    """The client a whole gap behind (the flagged test above) with per-segment stamps: no event merged,
    and its gaps as the server sent them."""
    _need_packets()
    with _server(itl_ms=10) as url:
        records = asyncio.run(_streams(url, 2, block_s=0.045, every_s=0.005, packets=True))
        stamps = _stamps(url)
    assert all(r.ok and r.stamps == "packet" for r in records)
    assert sum(r.merged_events for r in records) == 0
    assert float(np.percentile(_itl_errors_ms(records, stamps), 95)) < 2.0
    assert client_timing(records, max_lag_ms=50.0)["stamps"] == "packet"
