"""How often does the open-loop delivery gate call a level INVALID when the client was only busy, and does
it still catch a client that could not deliver? The old rule (send lateness p99 above max(10 ms, 5% of the
median gap), a sent rate under 95% of the schedule's, client lag p99 above 50 ms) beside the new one
(load.validity: rate and dispersion within their own sampling error, lateness p99 within max(10 ms, one
mean gap)), both judged on the same levels.

Each level is a real ``seatrial bench --rate R`` (Poisson, ``--requests N``, its own seed) against the
synthetic server (ample slots: the server never holds a request back, so only the client's delivery is
judged). Scenarios:
- ``busy``: ``--hogs K`` processes spin on the host's CPUs at the client's priority for the whole run
  (the CI's situation: a test worker beside the client). The load is delivered within its own error, so
  every INVALID here is false.
- ``starved``: as busy, and the client's process is stopped (SIGSTOP) for ``--stall-s`` seconds a third of
  the way into its level (the field's 2.6 s starvation): the load was not delivered; INVALID is right.
Printed per scenario and rate: levels, INVALID by each rule with a 95% Wilson interval, the send lateness
p99 (median and max over the levels) and the loop's CPU wait.

    PYTHONPATH=src python benchmarks/lateness_gate.py [--rates 4,24,100] [--reps 20] [--requests 139]
        [--hogs 3] [--stall-s 2.6]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.runs.folder import read_jsonl
from seatrial.stats.proportions import wilson
from seatrial.testing.server import start_process

SEATRIAL = [sys.executable, "-m", "seatrial.cli.app"]
HOG = "while True: pass"


def old_rule(rows: list[dict]) -> bool:
    """The gate before issue 38: True when the level was INVALID by it (delivery reasons only)."""
    due = np.sort([r["scheduled_ms"] for r in rows])
    sent = np.sort([r["sent_ms"] for r in rows])
    late = np.asarray([r["sent_ms"] - r["scheduled_ms"] for r in rows])
    lag = late - np.asarray([r.get("cap_wait_ms", 0.0) for r in rows])
    threshold = max(10.0, 0.05 * float(np.median(np.diff(due))))
    rate_short = (sent[-1] - sent[0]) > (due[-1] - due[0]) / 0.95
    return bool(np.percentile(late, 99) > threshold or rate_short or np.percentile(lag, 99) > 50.0)


def level(url: str, rate: float, n: int, seed: int, tmp: Path, stall_s: float) -> dict:
    out, js = tmp / f"r{rate:g}-{seed}", tmp / f"r{rate:g}-{seed}.json"
    args = [*SEATRIAL, "bench", "--url", url, "--input-len", "8", "--output-len", "8", "--rate", str(rate),
            "--requests", str(n), "--warmup", "0", "--seed", str(seed), "--allow-invalid", "--out", str(out),
            "--json", str(js)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if stall_s:
        threading.Thread(target=stall, args=(proc, url, n / rate / 3, stall_s), daemon=True).start()
    _, err = proc.communicate(timeout=600)
    if not js.exists():
        raise SystemExit(f"bench failed ({proc.returncode}): {err.decode()[-1500:]}")
    lv = json.loads(js.read_text())["levels"][0]
    rows = [r for r in read_jsonl(out / "requests.jsonl") if r["phase"] == "measure"]
    delivery = [r for r in lv["invalid_reasons"] if "failed" not in r and "output length" not in r]
    return {"old": old_rule(rows), "new": bool(delivery), "p99": lv["lateness"]["p99_ms"],
            "cpu_wait_ms": lv["client_timing"]["cpu_wait_ms"] or 0.0, "reasons": delivery}  # fmt: skip


def arrived(url: str) -> float:
    """Prompt tokens the server has taken so far (its counter grows with every request)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        line = next(x for x in r.read().decode().splitlines() if x.startswith("vllm:prompt_tokens_total"))
    return float(line.split()[-1])


def stall(proc: subprocess.Popen, url: str, after_s: float, stall_s: float) -> None:
    """Stops the client ``after_s`` into its level (the server's first new prompt marks its start) for
    ``stall_s``."""
    before = arrived(url)
    while proc.poll() is None and arrived(url) == before:
        time.sleep(0.02)
    time.sleep(after_s)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(stall_s)
        os.kill(proc.pid, signal.SIGCONT)


def share(k: int, n: int) -> str:
    lo, hi = wilson(k, n, 0.95)
    return f"{k}/{n} = {k / n:.0%} [{lo:.0%}, {hi:.0%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="4,24,100")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--requests", type=int, default=139, help="a capacity probe's first run at 0.9 / 95%%")
    ap.add_argument("--hogs", type=int, default=3, help="spinning processes beside the client")
    ap.add_argument("--stall-s", type=float, default=2.6)
    ap.add_argument("--scenarios", default="busy,starved")
    a = ap.parse_args()
    proc, url = start_process(5.0, 5.0)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(a.hogs)]
    print(f"{os.cpu_count()} CPUs, {a.hogs} spinning processes beside the client; synthetic server, "
          f"{a.requests} Poisson requests a level, 8 tokens each")  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for scenario in a.scenarios.split(","):
                for rate in (float(x) for x in a.rates.split(",")):
                    stall_s = a.stall_s if scenario == "starved" else 0.0
                    reps = a.reps if scenario == "busy" else max(3, a.reps // 4)
                    res = [level(url, rate, a.requests, 1000 + i, Path(tmp), stall_s) for i in range(reps)]
                    p99 = [r["p99"] for r in res]
                    print(f"{scenario} {rate:g} req/s: INVALID old {share(sum(r['old'] for r in res), reps)}, "
                          f"new {share(sum(r['new'] for r in res), reps)}; lateness p99 median "
                          f"{statistics.median(p99):.1f} ms, max {max(p99):.1f} ms; loop CPU wait median "
                          f"{statistics.median(r['cpu_wait_ms'] for r in res):.0f} ms", flush=True)  # fmt: skip
                    for r in res:
                        if r["new"]:
                            print(f"  new rule: {r['reasons'][0][:200]}")
    finally:
        for h in hogs:
            h.kill()
        proc.terminate()


if __name__ == "__main__":
    main()
