"""The engine's spans beside the client's records: the OTLP receiver (real HTTP on loopback, bodies encoded
with opentelemetry-proto as vLLM's exporter encodes them) and bench's join against the synthetic server,
which exports one span per request as vLLM does."""

from __future__ import annotations

import asyncio
import gzip
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from tests.benchrun import bench_into
from tests.clirun import invoke

from seatrial.load.config import BenchConfig
from seatrial.load.records import RequestRecord
from seatrial.load.spans import SpanBook, trace_id
from seatrial.runs.folder import read_jsonl
from seatrial.server.otlp import PROTOBUF, SpanReceiver, encode_spans, parse_listen
from seatrial.server.process import free_port
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def post(url: str, body: bytes, content_type: str = PROTOBUF, encoding: str | None = None) -> tuple[int, bytes]:
    headers = {"Content-Type": content_type} | ({"Content-Encoding": encoding} if encoding else {})
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


SPAN = {"request_id": "cmpl-L0-00001-0", "trace_id": "ab" * 16, "queue_ms": 1.5, "prefill_ms": 2.0,
        "decode_ms": 30.0, "ttft_ms": 3.5, "e2e_ms": 34.0}  # fmt: skip


def test_receiver_keeps_request_spans_counts_others_and_answers_as_otlp_asks() -> None:
    with SpanReceiver("127.0.0.1", free_port()) as rx:
        status, reply = post(rx.endpoint, encode_spans([SPAN], ("Load model", "Warmup (CPU)")))
        status_gz, _ = post(rx.endpoint, gzip.compress(encode_spans([SPAN | {"request_id": "x"}])), encoding="gzip")
        spans = rx.take()
    assert (status, status_gz) == (200, 200)
    ExportTraceServiceResponse().ParseFromString(reply)  # an (empty) ExportTraceServiceResponse
    assert [s.request_id for s in spans] == ["cmpl-L0-00001-0", "x"]
    assert spans[0].trace_id == "ab" * 16
    assert spans[0].timing == pytest.approx(
        {"queue_ms": 1.5, "prefill_ms": 2.0, "decode_ms": 30.0, "ttft_ms": 3.5, "e2e_ms": 34.0}
    )
    assert (rx.counts.posts, rx.counts.spans, rx.counts.other_spans, rx.counts.refused) == (2, 2, 2, 0)


def test_receiver_refuses_json_and_garbage_and_says_why() -> None:
    with SpanReceiver("127.0.0.1", free_port()) as rx:
        json_status, _ = post(rx.endpoint, b"{}", content_type="application/json")
        bad_status, _ = post(rx.endpoint, b"\xff\xff not a protobuf")
        spans = rx.take()
    assert (json_status, bad_status) == (415, 400) and spans == []
    assert rx.counts.refused == 2 and "undecodable body" in (rx.counts.last_refusal or "")


def test_listen_address_is_checked_and_a_busy_port_is_a_clear_error() -> None:
    assert parse_listen("127.0.0.1:4318") == ("127.0.0.1", 4318)
    assert parse_listen("[::1]:4318") == ("::1", 4318)
    for bad in ("4318", "host:", "127.0.0.1:70000", ":4318"):
        with pytest.raises(ValueError, match="HOST:PORT"):
            parse_listen(bad)
    with SpanReceiver("127.0.0.1", free_port()) as rx:
        out = invoke(["bench", "--url", "http://127.0.0.1:1", "--otlp-listen", f"127.0.0.1:{rx.port}"])
    assert out.code == 2 and "cannot listen there" in out.output
    out = invoke(["bench", "--url", "http://127.0.0.1:1", "--otlp-listen", "nowhere"])
    assert out.code == 2 and "HOST:PORT" in out.output


def test_a_span_without_the_request_id_is_joined_by_its_trace_id() -> None:
    async def go() -> Any:
        with SpanReceiver("127.0.0.1", free_port()) as rx:
            book = SpanBook(rx, flush_s=5.0)
            rec = RequestRecord("L0-00007", "measure", 1, ttft_ms=10.0, e2e_ms=50.0)
            book.sent(rec)
            opaque = SPAN | {"request_id": "engine-internal-42", "trace_id": trace_id(book.salt, rec.request_id)}
            await asyncio.to_thread(post, rx.endpoint, encode_spans([opaque]))
            timing = book.join([rec], await book.settle([rec]))
            return rec, timing, book.counts()

    rec, timing, counts = asyncio.run(go())
    assert timing.status == "MEASURED" and (timing.joined, timing.joined_by_trace_id) == (1, 1)
    assert rec.server_timing is not None and rec.server_timing["queue_ms"] == pytest.approx(1.5)
    assert timing.network_client_ms.p50 == pytest.approx(10.0 - 3.5)
    assert (counts.joined, counts.unmatched) == (1, 0)


def _settle_one(spans: list[dict[str, Any]], flush_s: float) -> tuple[RequestRecord, Any, Any, float]:
    """One measured request L0-00001 sent, ``spans`` exported (a dict's ``trace_id`` None: this run's)."""

    async def go() -> Any:
        with SpanReceiver("127.0.0.1", free_port()) as rx:
            book = SpanBook(rx, flush_s=flush_s)
            rec = RequestRecord("L0-00001", "measure", 1, ttft_ms=10.0, e2e_ms=50.0)
            book.sent(rec)
            ours = [sp | {"trace_id": sp["trace_id"] or trace_id(book.salt, rec.request_id)} for sp in spans]
            await asyncio.to_thread(post, rx.endpoint, encode_spans(ours))
            t = time.monotonic()
            waited = await book.settle([rec])
            return rec, book.join([rec], waited), book.counts(), time.monotonic() - t

    return asyncio.run(go())  # type: ignore[no-any-return]


def test_an_earlier_runs_span_with_this_runs_request_id_is_never_joined() -> None:
    """An exporter still retrying an earlier run's batch when this run's receiver comes up delivers spans
    named like this run's requests (every run names them L0-00000, ...); the engine carries this run's
    trace ids, so the earlier run's trace id gives it away, whichever comes first."""
    stale = SPAN | {"ttft_ms": 999.0, "e2e_ms": 999.0}
    rec, timing, counts, _ = _settle_one([stale, SPAN | {"trace_id": None}], flush_s=5.0)
    assert rec.server_timing is not None and rec.server_timing["ttft_ms"] == pytest.approx(3.5)
    assert (timing.joined, counts.joined, counts.other_runs, counts.unmatched, counts.duplicates) == (1, 1, 1, 0, 0)


def test_an_engine_that_makes_its_own_trace_ids_is_joined_by_request_id_when_the_wait_ends() -> None:
    rec, timing, counts, took = _settle_one([SPAN], flush_s=0.5)
    assert rec.server_timing is not None and rec.server_timing["ttft_ms"] == pytest.approx(3.5)
    assert (timing.joined, timing.joined_by_trace_id, counts.other_runs, counts.unmatched) == (1, 0, 0, 0)
    assert took >= 0.5  # it waited for a span with this run's trace id that never came


def cfg(url: str, listen: str, flush_s: float = 10.0, **load: Any) -> BenchConfig:
    return BenchConfig.model_validate({
        "target": {"url": url, "endpoint": load.pop("endpoint", "completions")},
        "workload": {"name": "random", "input_len": 8, "output_len": 6},
        "load": {"concurrency": [2], "requests": 8, "warmup": 2, **load},
        "observe": {"otlp_listen": listen, "otlp_flush_s": flush_s, "gpu_telemetry": False},
    })  # fmt: skip


def run(config: BenchConfig, out: Path) -> dict[str, Any]:
    return bench_into(config, out)


@pytest.mark.parametrize(("endpoint", "workers"), [("completions", 1), ("chat", 1), ("completions", 2)])
def test_bench_joins_every_span_to_its_request(tmp_path: Path, endpoint: str, workers: int) -> None:
    """Single client or a pool of worker processes (the records come back through the driver)."""
    port = free_port()
    synth = SyntheticConfig(itl_s=0.002, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces", stray_spans=3)
    with ThreadedServer(synth) as srv:
        config = cfg(srv.url, f"127.0.0.1:{port}", concurrency=[1, 2], endpoint=endpoint, workers=workers)
        summary = run(config, tmp_path)
    for level in summary["levels"]:
        st = level["server_timing"]
        assert st["status"] == "MEASURED" and (st["requests"], st["joined"], st["without_span"]) == (8, 8, 0)
        assert st["server_exceeds_client"] == 0 and st["flush_wait_s"] < st["flush_bound_s"]
        assert 0 < st["ttft_ms"]["p50"] <= level["ttft_ms"]["p50"] and st["network_client_ms"]["p50"] > 0
        assert st["queue_ms"]["max"] == 0.0 and st["decode_ms"]["p50"] > 0
    spans = summary["spans"]
    # the strays carry trace ids of no request here, and the server carries this run's: another run's spans
    assert (spans["joined"], spans["warmup"], spans["other_runs"], spans["unmatched"], spans["late"]) == (16, 4, 3, 0, 0)
    assert spans["other_runs_ids"] == [f"cmpl-stray-{k}-0" for k in range(3)] and spans["unmatched_ids"] == []
    assert spans["other_spans"] >= 1  # the "start-up" span each export carries, counted, not kept
    rows = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] == "measure"]
    assert len(rows) == 16 and all(r["server_timing"]["e2e_ms"] <= r["e2e_ms"] + 1.0 for r in rows)


def test_requests_without_a_span_are_counted_and_said(tmp_path: Path) -> None:
    port = free_port()
    synth = SyntheticConfig(itl_s=0.002, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces", spanless_every=4)
    with ThreadedServer(synth) as srv:
        summary = run(cfg(srv.url, f"127.0.0.1:{port}", flush_s=0.5, warmup=0), tmp_path)
    level = summary["levels"][0]
    st = level["server_timing"]
    assert (st["joined"], st["without_span"]) == (6, 2) and st["flush_wait_s"] >= 0.5
    assert any("2 of 8 measured requests got no span" in n for n in level["notes"])
    rows = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] == "measure"]
    assert sum(r["server_timing"] is None for r in rows) == 2


def test_a_server_without_tracing_gives_unavailable_with_the_reason(tmp_path: Path) -> None:
    port = free_port()
    with ThreadedServer(SyntheticConfig(itl_s=0.002)) as srv:
        summary = run(cfg(srv.url, f"127.0.0.1:{port}", flush_s=0.3, concurrency=[1, 2]), tmp_path)
    first, second = (lv["server_timing"] for lv in summary["levels"])
    assert first["status"] == second["status"] == "UNAVAILABLE"
    assert "no span arrived" in first["reason"] and "--otlp-traces-endpoint" in first["reason"]
    assert first["flush_wait_s"] >= 0.3 and second["flush_wait_s"] < 0.3  # once silent, no second wait
    assert summary["spans"]["spans"] == 0


def test_bench_cli_shows_the_engine_spans_and_the_report_has_them(tmp_path: Path) -> None:
    port = free_port()
    synth = SyntheticConfig(itl_s=0.002, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces", stray_spans=1)
    with ThreadedServer(synth) as srv:
        out = invoke(["bench", "--url", srv.url, "--input-len", "8", "--output-len", "4", "--requests", "4",
                      "--otlp-listen", f"127.0.0.1:{port}", "--no-gpu-telemetry", "--out", str(tmp_path)])  # fmt: skip
    assert out.code == 0, out.output
    assert "Engine spans per level" in out.output and "4/4" in out.output
    assert "1 spans of another run (" in out.output and "e.g. cmpl-stray-0-0" in out.output
    page = (tmp_path / "report.html").read_text()
    assert "Engine spans per level" in page and "other runs 1, unmatched 0" in page


def test_spans_are_refused_beside_disable_log_stats() -> None:
    """vLLM 0.32 asserts in its span code when log stats are off: every request would fail."""
    from seatrial.errors import ConfigError
    from seatrial.server.engine import tracing_args, tracing_env

    assert tracing_args("http://127.0.0.1:4318/v1/traces", ["--max-num-seqs", "4"]) == [
        "--otlp-traces-endpoint", "http://127.0.0.1:4318/v1/traces"
    ]  # fmt: skip
    assert tracing_env()["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    with pytest.raises(ConfigError, match="--disable-log-stats"):
        tracing_args("http://127.0.0.1:4318/v1/traces", ["--disable-log-stats"])
