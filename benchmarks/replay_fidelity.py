"""Replay fidelity: do requests leave at their trace times? seatrial's trace replay against vLLM's own
(``vllm bench serve --dataset-name timed_trace``) on the same trace and the same server.

For each rate (--rates, requests/s) a Mooncake-format trace of Poisson arrivals is written (--seconds long,
at least 50 lines; 32 prompt tokens as one hash id each, 4 output tokens). A synthetic token server (its own
process, 1 ms to the first token and between tokens) stamps each request's arrival with ``perf_counter_ns``
(CLOCK_MONOTONIC, shared by every process on Linux) per X-Request-Id. Each client replays the trace once:
seatrial with ``--workers W`` for each W of --workers (one client process, or W processes sharing the
level), and vLLM's benchmark client (engine venv) with the trace's own timestamps.

Two figures per run, in ms:
- server-seen lateness: per request, its arrival at the server minus its trace time, less the smallest such
  difference of the run (the start the least-late request implies); the same measure for every client;
- seatrial's own: the level's ``lateness`` (``sent_ms - scheduled_ms`` per request, from its records), which
  seatrial judges a level by (INVALID above max(10 ms, 5% of the median gap) at p99).
Printed: p50 / p99 of each, and the ratio of seatrial's server-seen p99 to vLLM's in the same round (below 1:
seatrial kept the schedule better), and how long seatrial's event loops waited for a CPU over the level
(``client_timing.cpu_wait_ms``: on a busy host, the share of lateness that is the host's). The server is the
same process for both, so a server too slow to accept (at 1,000/s on a small host) delays both alike.

    .venv/bin/python benchmarks/replay_fidelity.py [--rates 10,100,1000] [--workers 1,2] [--seconds 4] [--no-vllm]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

from seatrial.runs.folder import read_jsonl
from seatrial.server.engine import engine_python, make_tiny_model
from seatrial.testing.server import start_process

VLLM_DRIVER = """
import argparse, json, sys
from vllm.benchmarks.serve import add_cli_args, main
parser = argparse.ArgumentParser()
add_cli_args(parser)
args = parser.parse_args(sys.argv[2:])
result = main(args)
json.dump({k: result.get(k) for k in ("completed", "duration")}, open(sys.argv[1], "w"))
"""


def write_trace(path: Path, rate: float, n: int, seed: int) -> list[float]:
    """Poisson arrivals at ``rate``; returns the trace times in ms."""
    rng, t, times = random.Random(seed), 0.0, []
    with path.open("w") as f:
        for i in range(n):
            times.append(round(t, 3))
            row = {"timestamp": times[-1], "input_length": 32, "output_length": 4, "hash_ids": [seed * 1_000_000 + i]}
            f.write(json.dumps(row) + "\n")
            t += rng.expovariate(rate) * 1000
    return times


def arrivals(url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{url}/arrivals", timeout=30) as resp:
        return {k: int(v) for k, v in json.loads(resp.read()).items()}


def server_seen(times_ms: list[float], arrived_ns: list[int | None]) -> tuple[float, float, int]:
    """p50, p99 of arrival − trace time − the run's smallest such difference; and how many never arrived."""
    diffs = np.asarray([a / 1e6 - t for t, a in zip(times_ms, arrived_ns, strict=True) if a is not None])
    late = diffs - diffs.min()
    return float(np.percentile(late, 50)), float(np.percentile(late, 99)), sum(a is None for a in arrived_ns)


def run_seatrial(url: str, trace: Path, workers: int, tmp: Path) -> dict[str, float]:
    out = tmp / f"seatrial-{trace.stem}-w{workers}"
    cmd = [sys.executable, "-m", "seatrial.cli.app", "bench", "--url", url, "--workload", "trace", "--trace", str(trace),
           "--trace-format", "mooncake", "--warmup", "0", "--workers", str(workers), "--allow-invalid",
           "--max-lag-ms", "100000", "--out", str(out), "--json", str(out / "s.json")]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    level = json.loads((out / "s.json").read_text())["levels"][0]
    rows = [r for r in read_jsonl(out / "requests.jsonl") if r["phase"] == "measure"]
    seen = arrivals(url)
    times = [json.loads(x)["timestamp"] for x in trace.read_text().splitlines()]
    by_line = {r["trace_line"]: seen.get(r["request_id"]) for r in rows}
    p50, p99, lost = server_seen(times, [by_line.get(i) for i in range(len(times))])
    late = level["lateness"]
    return {"seen_p50": p50, "seen_p99": p99, "lost": lost, "own_p50": late["p50_ms"], "own_p99": late["p99_ms"],
            "own_max": late["max_ms"], "threshold": late["threshold_ms"], "valid": level["valid"],
            "cpu_wait": level["client_timing"]["cpu_wait_ms"]}  # fmt: skip


def run_vllm(url: str, trace: Path, tokenizer: Path, tmp: Path) -> dict[str, float]:
    n = len(trace.read_text().splitlines())
    prefix = f"vllm-{trace.stem}-"
    args = ["--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions", "--model", "tiny",
            "--tokenizer", str(tokenizer), "--dataset-name", "timed_trace", "--dataset-path", str(trace),
            "--timed-trace-chunk-hash-size", "512", "--timed-trace-sec-multiplier", "0.001", "--num-prompts", str(n),
            "--request-id-prefix", prefix, "--disable-tqdm"]  # fmt: skip
    out = tmp / f"{prefix}result.json"
    subprocess.run([str(engine_python()), "-c", VLLM_DRIVER, str(out), *args], check=True, capture_output=True)
    seen = arrivals(url)
    times = [json.loads(x)["timestamp"] for x in trace.read_text().splitlines()]
    p50, p99, lost = server_seen(times, [seen.get(f"{prefix}{i}") for i in range(n)])
    return {"seen_p50": p50, "seen_p99": p99, "lost": lost}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10,100,1000")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--no-vllm", action="store_true")
    a = ap.parse_args()
    rates = [float(r) for r in a.rates.split(",")]
    workers = [int(w) for w in a.workers.split(",")]
    proc, url = start_process(itl_ms=1.0, ttft_ms=1.0)
    try:
        with tempfile.TemporaryDirectory(prefix="seatrial-replay-") as tmpdir:
            tmp = Path(tmpdir)
            tokenizer = None if a.no_vllm else make_tiny_model(tmp / "tiny")
            print("| rate/s | requests | client | server-seen p50 / p99 | seatrial's own p50 / p99 / max (threshold) | "
                  "p99 / vLLM's | seatrial's CPU wait ms |\n|---|---|---|---|---|---|---|")  # fmt: skip
            for k, rate in enumerate(rates):
                n = max(50, int(rate * a.seconds))
                trace = tmp / f"trace-{rate:g}.jsonl"
                write_trace(trace, rate, n, seed=k + 1)
                peer = None if tokenizer is None else run_vllm(url, trace, tokenizer, tmp)
                if peer is not None:
                    lost = f", {peer['lost']} lost" if peer["lost"] else ""
                    print(f"| {rate:g} | {n} | vLLM timed_trace | {peer['seen_p50']:.2f} / {peer['seen_p99']:.2f}{lost} | – | 1 | – |")
                for w in workers:
                    r = run_seatrial(url, trace, w, tmp)
                    ratio = f"{r['seen_p99'] / peer['seen_p99']:.2f}" if peer and peer["seen_p99"] > 0 else "–"
                    own = f"{r['own_p50']:.2f} / {r['own_p99']:.2f} / {r['own_max']:.2f} ({r['threshold']:.1f}{'' if r['valid'] else ', INVALID'})"
                    wait = "–" if r["cpu_wait"] is None else f"{r['cpu_wait']:,.0f}"
                    print(f"| {rate:g} | {n} | seatrial --workers {w} | {r['seen_p50']:.2f} / {r['seen_p99']:.2f} | {own} | {ratio} | {wait} |",
                          flush=True)  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
