"""Tokens per chunk: one per chunk unless the server reports usage in every chunk; the server's total
tells where that was wrong, and the level says so."""

from __future__ import annotations

import asyncio

import pytest

from seatrial.load.client import Endpoint, new_http, send
from seatrial.load.metrics import client_timing
from seatrial.load.records import RequestRecord
from seatrial.load.workloads import RequestSpec
from seatrial.testing.server import SyntheticConfig, ThreadedServer

OUTPUT = 8


def _records(tokens_per_chunk: int, continuous_usage: bool, kind: str = "completions") -> list[RequestRecord]:
    cfg = SyntheticConfig(itl_s=0.004, ttft_s=0.005, tokens_per_chunk=tokens_per_chunk)

    async def run(url: str) -> list[RequestRecord]:
        ep = Endpoint(url, "synthetic", kind, {}, continuous_usage)
        spec = RequestSpec(prompt="w1 w2 w3", output_len=OUTPUT)
        async with new_http(30, 10) as http:
            return list(
                await asyncio.gather(
                    *(send(http, ep, spec, RequestRecord(f"u{i}", "measure", 3)) for i in range(3))
                )
            )

    with ThreadedServer(cfg) as srv:
        return asyncio.run(run(srv.url))


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_one_token_chunks_need_no_usage_in_every_chunk(kind: str) -> None:
    records = _records(1, continuous_usage=False, kind=kind)
    assert all(r.ok and not r.usage_per_chunk for r in records)
    assert all(r.output_tokens == r.chunks == OUTPUT and len(r.itl_ms) == OUTPUT - 1 for r in records)
    timing = client_timing(records, max_lag_ms=50.0)
    assert timing["itl_per_chunk_requests"] == 0 and "continuous-usage" not in timing.get("note", "")


def test_chunks_of_several_tokens_are_flagged_without_usage_in_every_chunk() -> None:
    records = _records(3, continuous_usage=False)
    assert all(r.ok and not r.usage_per_chunk for r in records)
    # 8 tokens in chunks of 3, 3, 2: the total comes from the server's last usage, the gaps per chunk
    assert all(r.output_tokens == OUTPUT and r.chunks == 3 and len(r.itl_ms) == 2 for r in records)
    timing = client_timing(records, max_lag_ms=50.0)
    assert timing["itl_per_chunk_requests"] == 3
    assert timing["note"].startswith(
        f"3 requests carried {3 * OUTPUT} tokens (the server's usage) in 9 chunks"
    )


def test_usage_in_every_chunk_spreads_each_gap_over_its_tokens() -> None:
    records = _records(3, continuous_usage=True)
    for r in records:
        assert r.ok and r.usage_per_chunk and r.output_tokens == OUTPUT and r.chunks == 3
        # the first chunk's 3 tokens make the TTFT; then a gap over 3 tokens and one over 2
        assert len(r.itl_ms) == 5
        assert r.itl_ms[0] == r.itl_ms[1] == r.itl_ms[2] and r.itl_ms[3] == r.itl_ms[4]
        # the measured gaps, spread: together they span first token to last (no clock threshold here)
        assert r.itl_ms[0] > 0 and sum(r.itl_ms) == pytest.approx(r.last_token_ms - r.ttft_ms)
    assert client_timing(records, max_lag_ms=50.0)["itl_per_chunk_requests"] == 0


def test_an_empty_completions_chunk_carries_no_token() -> None:
    """Issue 16 item 14: a trailing finish chunk with empty text and no usage is not a token (it added
    a fake ITL sample)."""
    from seatrial.load.client import _Timing
    from seatrial.load.sse import parse_data_line

    rec = RequestRecord("x", "measure", 1)
    timing = _Timing(rec, 0)
    lines = [
        b'data: {"id":"c","choices":[{"index":0,"text":" a","finish_reason":null}]}',
        b'data: {"id":"c","choices":[{"index":0,"text":" b","finish_reason":null}]}',
        b'data: {"id":"c","choices":[{"index":0,"text":"","finish_reason":"length"}]}',
    ]
    for t, line in enumerate(lines, start=1):
        chunk = parse_data_line(line)
        assert chunk is not None
        timing.on_chunk(chunk, t * 1_000_000)
    timing.finish(4_000_000)
    assert rec.chunks == 2 and rec.itl_ms == [1.0] and rec.output_tokens == 2
    assert rec.finish_reason == "length"


def test_an_empty_finish_chunk_counts_only_when_the_servers_total_says_so() -> None:
    """A last token that decoded to nothing arrives as an empty chunk with its finish_reason: the
    server's usage total (one more than the chunks with text) tells it apart from a bare finish chunk."""
    from seatrial.load.client import _Timing
    from seatrial.load.sse import parse_data_line

    rec = RequestRecord("y", "measure", 1)
    timing = _Timing(rec, 0)
    lines = [
        b'data: {"id":"c","choices":[{"index":0,"text":" a","finish_reason":null}]}',
        b'data: {"id":"c","choices":[{"index":0,"text":"","finish_reason":"length"}]}',
        b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}',
    ]
    for t, line in enumerate(lines, start=1):
        chunk = parse_data_line(line)
        assert chunk is not None
        timing.on_chunk(chunk, t * 1_000_000)
    timing.finish(4_000_000)
    assert rec.output_tokens == 2 and rec.itl_ms == [1.0] and rec.last_token_ms == 2.0


@pytest.mark.parametrize("total", [3, 4])
def test_a_total_in_the_last_chunk_is_no_count_of_its_tokens(total: int) -> None:
    """Issue 39: llama-server sends no usage until its last chunk, where the total sits beside the
    finish_reason and the timings. That total is not the last chunk's tokens (it made ITL p50 0.0 ms: the
    whole output again, spread over no time); where it exceeds the chunks seen by one, the empty finish
    chunk carried a token that decoded to nothing."""
    from seatrial.load.client import _Timing
    from seatrial.load.sse import parse_data_line

    rec = RequestRecord("z", "measure", 1)
    timing = _Timing(rec, 0)
    last = (
        b'data: {"choices":[{"text":"","index":0,"finish_reason":"length"}],"id":"c","usage":{"completion_tokens":'
        + str(total).encode()
        + b',"prompt_tokens":8,"total_tokens":11},"timings":{"cache_n":0,"prompt_n":8,"prompt_ms":1.5,'
        b'"predicted_n":3,"predicted_ms":2.0,"predicted_per_token_ms":0.67}}'
    )
    lines = [
        b'data: {"choices":[{"text":" %d","index":0,"finish_reason":null}],"id":"c"}' % i for i in range(3)
    ]
    for t, line in enumerate([*lines, last], start=1):
        chunk = parse_data_line(line)
        assert chunk is not None
        timing.on_chunk(chunk, t * 1_000_000)
    timing.finish(5_000_000)
    assert not rec.usage_per_chunk and rec.output_tokens == total and rec.server_timing is not None
    assert rec.itl_ms == [1.0] * (total - 1) and rec.chunks == total and rec.last_token_ms == float(total)
