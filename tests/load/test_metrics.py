"""Metric definitions on synthetic records: the numbers are computed by hand here."""

from __future__ import annotations

import pytest

from seatrial.load.metrics import level_metrics
from seatrial.load.records import RequestRecord
from seatrial.stats import distribution


def rec(
    i: int, ttft: float, last: float, e2e: float, out: int, prompt: int = 10, err: str | None = None
) -> RequestRecord:
    return RequestRecord(
        request_id=f"r{i}",
        phase="measure",
        concurrency=2,
        prompt_tokens=prompt,
        output_tokens=out,
        ttft_ms=ttft,
        last_token_ms=last,
        e2e_ms=e2e,
        itl_ms=[(last - ttft) / max(1, out - 1)] * (out - 1),
        send_ns=i * 1_000_000_000,
        error=err,
    )


def test_tpot_is_decode_time_over_tokens_minus_one() -> None:
    r = rec(0, ttft=100.0, last=1000.0, e2e=1001.0, out=10)
    assert r.tpot_ms == pytest.approx(100.0)
    assert rec(0, 100.0, 100.0, 101.0, out=1).tpot_ms is None


def test_level_metrics_throughput_and_per_user() -> None:
    # r0: sent at 0 s, ends 2 s; r1: sent at 1 s, ends 2.5 s -> duration 2.5 s
    records = [rec(0, 100.0, 1900.0, 2000.0, out=10), rec(1, 200.0, 1400.0, 1500.0, out=20)]
    m = level_metrics(records)
    assert m["duration_s"] == pytest.approx(2.5)
    assert m["output_tok_s"] == pytest.approx(30 / 2.5)
    assert m["total_tok_s"] == pytest.approx(50 / 2.5)
    assert m["per_user_output_tok_s"] == pytest.approx((10 / 2.0 + 20 / 1.5) / 2)
    assert m["ttft_ms"]["p50"] == pytest.approx(150.0)
    assert m["tpot_ms"]["max"] == pytest.approx(200.0)


def test_failed_records_count_but_do_not_enter_latencies() -> None:
    records = [rec(0, 100.0, 1900.0, 2000.0, out=10), rec(1, 5.0, 5.0, 6.0, out=0, err="HTTP 500: boom")]
    m = level_metrics(records)
    assert (m["requests_ok"], m["requests_failed"]) == (1, 1)
    assert m["ttft_ms"]["mean"] == pytest.approx(100.0)


def test_distribution_matches_numpy_linear_percentiles() -> None:
    d = distribution([1.0, 2.0, 3.0, 4.0])
    assert d == {
        "mean": 2.5,
        "p50": 2.5,
        "p90": pytest.approx(3.7),
        "p95": pytest.approx(3.85),
        "p99": pytest.approx(3.97),
        "max": 4.0,
    }
    assert distribution([])["p99"] is None
