"""A level whose token times are not exact says so in its validity: events read merged with a later one,
timed per read, past the limit; never when each event kept its own segment's time."""

from __future__ import annotations

from seatrial.load.records import RequestRecord
from seatrial.load.validity import MERGED_MAX_SHARE, token_times_reason


def recs(stamps: str, merged: int, n: int = 4, chunks: int = 50) -> list[RequestRecord]:
    out = []
    for i in range(n):
        r = RequestRecord(f"r{i}", "measure", n, output_tokens=chunks, stamps=stamps)
        r.chunks, r.merged_events = chunks, merged
        out.append(r)
    return out


def test_merged_reads_past_the_limit_make_token_times_inexact() -> None:
    reason = token_times_reason(recs("kernel", merged=5))
    assert reason is not None and reason.startswith("token times not exact: 20 of 200 token events (10.0%)")
    assert token_times_reason(recs("user", merged=5)) is not None


def test_at_the_limit_or_with_packet_stamps_token_times_are_exact() -> None:
    at_limit = int(MERGED_MAX_SHARE * 50)  # 1% of each request's events: not past the limit
    assert token_times_reason(recs("kernel", merged=at_limit)) is None
    # per segment, events that share a stamp came in one segment: the server sent them together
    assert token_times_reason(recs("packet", merged=25)) is None


def test_failed_requests_do_not_count() -> None:
    records = recs("kernel", merged=0) + recs("kernel", merged=40, n=1)
    records[-1].error = "stream ended before [DONE]"
    assert token_times_reason(records) is None
