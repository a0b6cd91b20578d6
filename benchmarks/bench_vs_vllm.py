"""seatrial bench beside vLLM's own benchmark client on the same real vLLM server and workload.

Workload: random, 256 prompt tokens, 64 output tokens with ignore_eos, closed loop at C = 1, 4, 16.
For each C the clients (vLLM's; seatrial as it comes, which asks the server for exactly what vLLM's
client asks; seatrial with --continuous-usage, usage in every chunk; and with --stamps user, which
times chunks as vLLM's client does, when its coroutine reads them, instead of by the kernel's receive
time; --clients picks the variants; ``vllm-again``, a second run of vLLM's own client, gives the
noise floor: the spread of vLLM against itself on this machine) take turns in
rotating order for --reps rounds; each figure is the mean over rounds of that client's median.
Prints the ratio seatrial / vLLM for median TTFT, median TPOT and output tok/s: the median over rounds
of the ratio within each round (the two runs of a round are minutes apart at most, so a slow drift of
the shared machine cancels), with the lowest and highest round's ratio beside it. Target: each ratio
within 0.95-1.05, or a stated definition difference.

The referee: the engine's own latency histograms (vllm:time_to_first_token_seconds,
vllm:request_time_per_output_token_seconds), read before and after every run, give the engine's mean
TTFT and TPOT over exactly that client's requests (its 2 warm-ups included). A second table prints
them per client: where the engine's own figures differ between clients as the clients' figures do,
the server itself ran at that speed for that client, and the clients measured it alike. A third
prints each client's mean minus the engine's mean: the time each client adds to what the engine saw.
A fourth takes the engine's drift out of the ratio: each client's median over the engine's mean for
that client's own requests, seatrial's over vLLM's (tok/s times the engine's mean TPOT, since at a
fixed concurrency decode throughput goes as 1 / TPOT). Runs minutes apart find the engine faster or
slower; this ratio compares how each client measured the engine it had. Rounds in which a client
stalled (its median TPOT under half the engine's mean: tokens merged) are dropped for every client
and said; the per-round lines above each table still show them.

    .venv/bin/python benchmarks/bench_vs_vllm.py [--url URL] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _engine import vllm_server

from seatrial.server.engine import engine_python
from seatrial.server.prom import parse_metrics
from seatrial.server.scrape import Sample, summarize

VLLM_DRIVER = """
import argparse, json, sys
from vllm.benchmarks.serve import add_cli_args, main
parser = argparse.ArgumentParser()
add_cli_args(parser)
args = parser.parse_args(sys.argv[2:])
result = main(args)
keep = ("median_ttft_ms", "median_tpot_ms", "median_itl_ms", "output_throughput", "completed",
        "mean_ttft_ms", "mean_tpot_ms")
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
    return {
        "ttft": r["median_ttft_ms"],
        "tpot": r["median_tpot_ms"],
        "tok_s": r["output_throughput"],
        "ttft_mean": r["mean_ttft_ms"],
        "tpot_mean": r["mean_tpot_ms"],
    }


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
    return {
        "ttft": lv["ttft_ms"]["p50"],
        "tpot": lv["tpot_ms"]["p50"],
        "tok_s": lv["output_tok_s"],
        "ttft_mean": lv["ttft_ms"]["mean"],
        "tpot_mean": lv["tpot_ms"]["mean"],
    }


# nocu: --no-continuous-usage, as vLLM's client asks; cu: usage in every chunk (exact tokens per chunk);
# user: also --stamps user, as vLLM's client times;
# noscrape: /metrics never reached (vLLM renders it on its API server's event loop; see docs/metrics.md)
CLIENTS = ("vllm", "seatrial", "seatrial-nocu", "seatrial-cu", "seatrial-user")
EXTRA = {
    "seatrial": (),
    "seatrial-nocu": ("--no-continuous-usage",),
    "seatrial-cu": ("--continuous-usage",),
    "seatrial-user": ("--no-continuous-usage", "--stamps", "user"),
    "seatrial-noscrape": ("--metrics-url", "http://127.0.0.1:1/metrics"),
    "vllm-again": (),  # vLLM's client once more: its ratio to the first is the machine's noise
}


def run_client(name: str, url: str, tokenizer: Path, c: int, n: int, path: Path) -> dict[str, float]:
    """The client's figures, plus the engine's own means over the run (``engine_ttft``, ``engine_tpot``)."""
    before = engine_sample(url)
    if name.startswith("vllm"):
        out = run_vllm(url, tokenizer, c, n, path)
    else:
        out = run_seatrial(url, c, n, path, EXTRA[name])
    engine = summarize([before, engine_sample(url)])  # the same means seatrial bench joins per level
    out.update(engine_ttft=engine["ttft_ms_mean"], engine_tpot=engine["tpot_ms_mean"])
    return out


def engine_sample(url: str) -> Sample:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        return Sample(time.time(), parse_metrics(resp.read().decode()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--tokenizer", type=Path)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--clients", default="seatrial,seatrial-cu", help=f"seatrial variants of {sorted(EXTRA)}")
    opts = ap.parse_args()
    clients = ("vllm", *opts.clients.split(","))
    if unknown := set(clients[1:]) - EXTRA.keys():
        ap.error(f"unknown --clients {sorted(unknown)}; choose from {sorted(EXTRA)}")
    with vllm_server(opts.url, max_num_seqs=64) as (url, model), tempfile.TemporaryDirectory() as tmp:
        tokenizer = opts.tokenizer or model
        assert tokenizer is not None, "--tokenizer is needed with --url"
        head = "".join(
            f" {name.replace('seatrial-', 's-').replace('vllm-again', 'vllm2'):>9} {'ratio':>6} {'rounds':>11}"
            for name in clients[1:]
        )
        print(f"{'C':>3} {'metric':<6} {'vllm':>9}{head}")
        levels, tables = [int(x) for x in opts.levels.split(",")], []
        for c in levels:
            n = max(32, 8 * c)
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
            for rep in range(opts.reps):  # rotate the order each round: slow drifts of the machine cancel
                k = rep % len(clients)
                for name in clients[k:] + clients[:k]:
                    runs[name].append(
                        run_client(name, url, tokenizer, c, n, Path(tmp) / f"{name}{c}-{rep}.json")
                    )
            for metric in ("ttft", "engine_ttft", "tpot", "engine_tpot"):  # outliers stand out here
                rounds = "  ".join(
                    f"{name}: " + " ".join(f"{r[metric]:.1f}" for r in runs[name]) for name in clients
                )
                print(f"#  rounds {metric:<11} {rounds}", flush=True)
            runs = without_stalls(c, runs)
            for metric in ("ttft", "tpot", "tok_s"):
                print_row(c, metric, [[r[metric] for r in runs[name]] for name in clients])
            tables.append(runs)
        print("\nthe engine's own mean (its histograms, over each client's run):")
        for c, runs in zip(levels, tables, strict=True):
            for h in ("ttft", "tpot"):
                print_row(c, f"e_{h}", [[r[f"engine_{h}"] for r in runs[name]] for name in clients])
        print("\nover the engine's own mean for the same requests (the engine's drift taken out):")
        for c, runs in zip(levels, tables, strict=True):
            for metric in ("ttft", "tpot", "tok_s"):
                print_row(
                    c, f"n_{metric}", [[engine_relative(r, metric) for r in runs[name]] for name in clients]
                )
        print("\nclient mean - engine mean, ms (what each client adds to what the engine saw):")
        for c, runs in zip(levels, tables, strict=True):
            for h in ("ttft", "tpot"):
                added = [
                    statistics.fmean(r[f"{h}_mean"] - r[f"engine_{h}"] for r in runs[name])
                    for name in clients
                ]
                cells = "".join(f" {x:>9.2f} {'':>6} {'':>11}" for x in added[1:])
                print(f"{c:>3} {'+' + h:<6} {added[0]:>9.2f}{cells}", flush=True)


def without_stalls(c: int, runs: dict[str, list[dict[str, float]]]) -> dict[str, list[dict[str, float]]]:
    """The rounds in which no client stalled. A client whose median TPOT is under half the engine's own
    mean TPOT for the same requests got its tokens merged: the host held that client back (seen for
    vLLM's client and seatrial alike on a small shared host), so the round measured the host, not the
    engine. Such a round is dropped for every client, and said; all rounds are kept if all stalled."""
    stalled = sorted(
        {i for rounds in runs.values() for i, r in enumerate(rounds) if r["tpot"] < r["engine_tpot"] / 2}
    )
    total = len(next(iter(runs.values())))
    if not stalled or len(stalled) == total:
        return runs
    print(
        f"#  C={c}: rounds {[i + 1 for i in stalled]} of {total} dropped: a client's tokens merged (stalled)"
    )
    return {name: [r for i, r in enumerate(rounds) if i not in stalled] for name, rounds in runs.items()}


def engine_relative(run: dict[str, float], metric: str) -> float:
    """A client's figure over the engine's own for that client's requests (tok/s: times its TPOT)."""
    if metric == "tok_s":
        return run["tok_s"] * run["engine_tpot"]
    return run[metric] / run[f"engine_{metric}"]


def print_row(c: int, metric: str, rounds: list[list[float]]) -> None:
    """vLLM's mean over rounds, then each seatrial variant's with the median over rounds of its ratio
    to vLLM's in the same round, and the lowest and highest of those ratios."""
    v, *others = rounds
    cells = ""
    for x in others:
        ratios = [a / b for a, b in zip(x, v, strict=True)]
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        cells += f" {statistics.fmean(x):>9.2f} {statistics.median(ratios):>6.3f} {spread:>11}"
    print(f"{c:>3} {metric:<6} {statistics.fmean(v):>9.2f}{cells}", flush=True)


if __name__ == "__main__":
    main()
