"""Keep-alive connections the server closes (as llama-server's cpp-httplib closes each one after its
stream) cost no request, and a request the server really dropped stays a failure: a real server in a
thread, seatrial's client against it."""

from __future__ import annotations

import asyncio

import pytest
from tests.load.closing_server import ClosingConfig, ClosingServer

from seatrial.load.client import Endpoint, new_http, send
from seatrial.load.records import RequestRecord
from seatrial.load.workloads import RequestSpec


def run(cfg: ClosingConfig, n: int, concurrency: int) -> tuple[list[RequestRecord], list[str]]:
    async def main(url: str) -> list[RequestRecord]:
        ep = Endpoint(url, "m", "completions", {})
        gate = asyncio.Semaphore(concurrency)
        async with new_http(10, 5) as http:

            async def one(i: int) -> RequestRecord:
                async with gate:
                    rec = RequestRecord(f"r{i}", "measure", concurrency, expected_output_tokens=4)
                    return await send(http, ep, RequestSpec(prompt="hi", output_len=4), rec)

            return await asyncio.gather(*(one(i) for i in range(n)))

    with ClosingServer(cfg) as srv:
        records = asyncio.run(asyncio.wait_for(main(srv.url), timeout=60))
        return records, list(srv.ids)


@pytest.mark.parametrize(("delay_s", "concurrency"), [(0.0, 1), (0.002, 1), (0.002, 4)])
def test_connections_closed_after_each_stream_cost_no_request(delay_s: float, concurrency: int) -> None:
    # delay 0: the FIN is usually queued before the next request (the pool check, a refused write);
    # 2 ms: the next request reaches the socket before it closes, and the kernel resets it unread.
    records, ids = run(ClosingConfig(close_delay_s=delay_s), 40, concurrency)
    assert [r.error for r in records if r.error] == []
    assert all(r.output_tokens == 4 for r in records)
    assert sorted(ids) == sorted(r.request_id for r in records)  # each read once: none sent twice
    assert sum(r.resends + r.stale_connections for r in records) > 0  # the server did close them
    assert all(r.resends <= 1 for r in records)  # a resend goes out on a new connection: never stale


def test_a_server_that_closes_after_each_response_gets_a_new_connection_each_time() -> None:
    # the first pooled connection found closed right after its response tells the client: no more reuse,
    # so no more races with the server's close (40 requests, one after another, would find ~40 closed)
    records, ids = run(ClosingConfig(close_delay_s=0.0), 40, 1)
    assert [r.error for r in records if r.error] == [] and sorted(ids) == sorted(r.request_id for r in records)
    assert 1 <= sum(r.resends + r.stale_connections for r in records) <= 3


def test_a_fin_that_acknowledged_an_unread_request_waits_for_its_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    # cpp-httplib's shutdown, then close 30 ms later (its thread lost the CPU): the FIN acknowledges the
    # next request, which the kernel took in; the reset that says it was never read comes at the close.
    # (Reuse goes on here: the client's learning that the server closes each connection is switched off.)
    monkeypatch.setattr("seatrial.load.reuse.CLOSES_AFTER_RESPONSE_S", 0.0)
    records, ids = run(ClosingConfig(close_delay_s=0.002, shutdown_gap_s=0.03), 24, 1)
    assert [r.error for r in records if r.error] == []
    assert sum(r.resends for r in records) > 0 and sorted(ids) == sorted(r.request_id for r in records)


def test_request_dropped_mid_stream_stays_a_failure() -> None:
    records, ids = run(ClosingConfig(drop_every=4, drop_after=2), 24, 1)
    failed = [r for r in records if r.error]
    assert len(failed) == 6 and all("ClientPayloadError" in (r.error or "") for r in failed)
    # each read once: a dropped one was not sent again (a resend it has was of an earlier, unread send)
    assert sorted(ids) == sorted(r.request_id for r in records)


def test_request_read_then_hung_up_stays_a_failure() -> None:
    # A kept-alive connection: the server reads every 3rd request and closes without answering (a FIN,
    # not a reset): it may have acted on it, so it is not sent again.
    records, ids = run(ClosingConfig(keep_alive=True, hangup_every=3), 12, 1)
    failed = [r for r in records if r.error]
    assert len(failed) == 4 and all("Server disconnected" in (r.error or "") for r in failed)
    assert all(r.resends == 0 for r in records)
    assert len(ids) == len(set(ids)) == 12
