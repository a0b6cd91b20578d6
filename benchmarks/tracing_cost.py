"""What exporting spans costs vLLM-CPU: the same level on an engine without tracing, then on one that exports
to a port where nobody listens (the test session's engine between the tests that listen), then with bench's
receiver listening. Prints each one's output tok/s and TTFT p50 (median over rounds) and the ratio to the
engine without tracing, and how long each engine took to stop (the exporter's last flush at exit must not
hold it up). Two engine starts, one after the other, under ``nice``; on the tracing engine the rounds with and
without a receiver alternate. Drift between the two engines is not separated from the effect of tracing, so
read a ratio within a few percent of 1 as "no measurable cost"; every round's figures are printed.

    PYTHONPATH=src:. python benchmarks/tracing_cost.py [--rounds 3] [--requests 24]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.server.engine import EngineSpec, LocalEngine, make_tiny_model
from seatrial.server.process import free_port


def level(url: str, requests: int, listen: str | None) -> dict[str, Any]:
    cfg = BenchConfig.model_validate({
        "target": {"url": url},
        "workload": {"name": "random", "input_len": 64, "output_len": 32},
        "load": {"concurrency": [4], "requests": requests, "warmup": 2, "max_lag_ms": 1000},
        "observe": {"otlp_listen": listen, "otlp_flush_s": 5, "gpu_telemetry": False},
    })  # fmt: skip
    lv = asyncio.run(run_bench(cfg)).levels[0]
    joined = lv.server_timing.joined if lv.server_timing else None
    return {"tok_s": lv.output_tok_s or 0.0, "ttft_p50": lv.ttft_ms.p50 or 0.0, "joined": joined}


def rounds(url: str, n: int, requests: int, listen: str | None) -> list[dict[str, Any]]:
    return [level(url, requests, listen) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=24)
    a = ap.parse_args()
    os.nice(10)
    results: dict[str, list[dict[str, Any]]] = {}
    stops: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="seatrial-tracing-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        port = free_port()
        for name, otlp in (("no tracing", None), ("tracing", f"http://127.0.0.1:{port}/v1/traces")):
            spec = EngineSpec(model_dir=model, max_num_seqs=4, otlp_endpoint=otlp)
            engine = LocalEngine(spec, Path(tmp) / f"{name.replace(' ', '-')}.log")
            engine.wait_ready()
            try:
                if otlp is None:
                    results["no tracing"] = rounds(engine.url, a.rounds, a.requests, None)
                else:  # interleaved, so that drift on the shared machine falls on both alike
                    for _ in range(a.rounds):
                        results.setdefault("tracing, nobody listens", []).append(level(engine.url, a.requests, None))
                        listen = f"127.0.0.1:{port}"
                        results.setdefault("tracing, bench listens", []).append(level(engine.url, a.requests, listen))
            finally:
                t0 = time.monotonic()
                engine.stop()
                stops[name] = time.monotonic() - t0
        log = (Path(tmp) / "tracing.log").read_text(errors="replace")
        failed_exports = log.count("Failed to export")
    base = statistics.median(r["tok_s"] for r in results["no tracing"])
    base_ttft = statistics.median(r["ttft_p50"] for r in results["no tracing"])
    print(f"C=4, {a.requests} requests of 64+32 tokens per round, {a.rounds} rounds; median over rounds")
    print(f"{'engine':<26} {'out tok/s':>10} {'ratio':>6} {'TTFT p50 ms':>12} {'ratio':>6}  joined spans")
    for name, rows in results.items():
        tok = statistics.median(r["tok_s"] for r in rows)
        ttft = statistics.median(r["ttft_p50"] for r in rows)
        joined = [r["joined"] for r in rows]
        print(f"{name:<26} {tok:>10,.1f} {tok / base:>6.3f} {ttft:>12,.1f} {ttft / base_ttft:>6.3f}  {joined}")
        print(f"{'':<26} rounds: tok/s {[round(r['tok_s']) for r in rows]}, TTFT p50 {[round(r['ttft_p50'], 1) for r in rows]}")
    print(f"engine stop: {', '.join(f'{k} {v:.1f} s' for k, v in stops.items())}; "
          f"'Failed to export' lines in the tracing engine's log: {failed_exports}")  # fmt: skip


if __name__ == "__main__":
    main()
