"""seatrial bench beside vLLM's own benchmark client on the same real vLLM server and workload.

Workload: random, 256 prompt tokens, 64 output tokens with ignore_eos, closed loop at C = 1, 4, 16.
For each C the clients (vLLM's; seatrial; seatrial with --no-continuous-usage, which asks the server
for exactly what vLLM's client asks; and that with --stamps user, which also times chunks as vLLM's
client does, when its coroutine reads them, instead of by the kernel's receive time) take turns in
rotating order for --reps rounds; each figure is the mean over rounds of that client's median.
Prints the ratio seatrial / vLLM for median TTFT, median TPOT and output tok/s. Target: each ratio
within 0.95-1.05, or a stated definition difference.

    .venv/bin/python benchmarks/bench_vs_vllm.py [--url URL] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _engine import vllm_server

from seatrial.server.engine import engine_python

VLLM_DRIVER = """
import argparse, json, sys
from vllm.benchmarks.serve import add_cli_args, main
parser = argparse.ArgumentParser()
add_cli_args(parser)
args = parser.parse_args(sys.argv[2:])
result = main(args)
keep = ("median_ttft_ms", "median_tpot_ms", "median_itl_ms", "output_throughput", "completed")
json.dump({k: result.get(k) for k in keep}, open(sys.argv[1], "w"))
"""


def run_vllm(url: str, tokenizer: Path, c: int, n: int, out: Path) -> dict[str, float]:
    args = [
        "--backend",
        "openai",
        "--base-url",
        url,
        "--endpoint",
        "/v1/completions",
        "--model",
        "tiny",
        "--tokenizer",
        str(tokenizer),
        "--dataset-name",
        "random",
        "--random-input-len",
        "256",
        "--random-output-len",
        "64",
        "--ignore-eos",
        "--num-prompts",
        str(n),
        "--max-concurrency",
        str(c),
        "--request-rate",
        "inf",
        "--num-warmups",
        "2",
        "--disable-tqdm",
        "--seed",
        str(c),
    ]
    subprocess.run(
        [str(engine_python()), "-c", VLLM_DRIVER, str(out), *args], check=True, capture_output=True
    )
    r = json.loads(out.read_text())
    return {"ttft": r["median_ttft_ms"], "tpot": r["median_tpot_ms"], "tok_s": r["output_throughput"]}


def run_seatrial(url: str, c: int, n: int, out: Path, extra: tuple[str, ...] = ()) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "bench",
        "--url",
        url,
        "--workload",
        "random",
        "--input-len",
        "256",
        "--output-len",
        "64",
        "--concurrency",
        str(c),
        "--requests",
        str(n),
        "--warmup",
        "2",
        "--json",
        str(out),
        "--allow-invalid",
        "--seed",
        str(c),
        *extra,
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    lv = json.loads(out.read_text())["levels"][0]
    return {"ttft": lv["ttft_ms"]["p50"], "tpot": lv["tpot_ms"]["p50"], "tok_s": lv["output_tok_s"]}


# nocu: --no-continuous-usage, as vLLM's client asks; user: also --stamps user, as vLLM's client times;
# noscrape: /metrics never reached (vLLM renders it on its API server's event loop; see docs/metrics.md)
CLIENTS = ("vllm", "seatrial", "seatrial-nocu", "seatrial-user")
EXTRA = {
    "seatrial": (),
    "seatrial-nocu": ("--no-continuous-usage",),
    "seatrial-user": ("--no-continuous-usage", "--stamps", "user"),
    "seatrial-noscrape": ("--metrics-url", "http://127.0.0.1:1/metrics"),
}


def run_client(name: str, url: str, tokenizer: Path, c: int, n: int, path: Path) -> dict[str, float]:
    if name == "vllm":
        return run_vllm(url, tokenizer, c, n, path)
    return run_seatrial(url, c, n, path, EXTRA[name])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--tokenizer", type=Path)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--clients", default=",".join(CLIENTS[1:]), help=f"seatrial variants of {sorted(EXTRA)}")
    opts = ap.parse_args()
    clients = ("vllm", *opts.clients.split(","))
    if unknown := set(clients[1:]) - EXTRA.keys():
        ap.error(f"unknown --clients {sorted(unknown)}; choose from {sorted(EXTRA)}")
    with vllm_server(opts.url, max_num_seqs=64) as (url, model), tempfile.TemporaryDirectory() as tmp:
        tokenizer = opts.tokenizer or model
        assert tokenizer is not None, "--tokenizer is needed with --url"
        head = "".join(f" {name.replace('seatrial-', 's-'):>9} {'ratio':>6}" for name in clients[1:])
        print(f"{'C':>3} {'metric':<6} {'vllm':>9}{head}")
        for c in [int(x) for x in opts.levels.split(",")]:
            n = max(32, 8 * c)
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
            for rep in range(opts.reps):  # rotate the order each round: slow drifts of the machine cancel
                k = rep % len(clients)
                for name in clients[k:] + clients[:k]:
                    runs[name].append(
                        run_client(name, url, tokenizer, c, n, Path(tmp) / f"{name}{c}-{rep}.json")
                    )
            for metric in ("ttft", "tpot", "tok_s"):
                v, *others = (statistics.fmean(r[metric] for r in runs[name]) for name in clients)
                cells = "".join(f" {x:>9.2f} {x / v:>6.3f}" for x in others)
                print(f"{c:>3} {metric:<6} {v:>9.2f}{cells}", flush=True)


if __name__ == "__main__":
    main()
