"""GPU telemetry during load, checked against the GPU's own energy counter: ``seatrial bench`` against the
synthetic server (a process of its own) while the GPU idles, then while a torch matmul loop loads it; for
every level and GPU, the integral of the power bench sampled at 10 Hz (NVML's averaged reading, and its
instant reading) over the energy counter's delta (``nvmlDeviceGetTotalEnergyConsumption``) across the same
span. Target: each ratio within 5% of 1. Also the sampling rate achieved against the 10 Hz asked.
Each phase's run folder (report.html with the power plot) is written under ``--out``.

    PYTHONPATH=src python benchmarks/gpu_energy_vs_counter.py --out runs/energy [--level-s 20]

Exit 0 when every level meets the target, 1 when one misses it, 8 when no GPU could be read.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import BenchSummary
from seatrial.testing.server import start_process

TARGET = 0.05
OUTPUT_LEN, ITL_MS = 100, 10.0  # one request streams for about 1 s
MATMUL = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(sys.argv[1]); print("matmul loop on", torch.cuda.get_device_name(), flush=True)
while time.time() < end:
    for _ in range(16):
        c = a @ b
    torch.cuda.synchronize()
"""


def bench(url: str, levels: list[int], level_s: float, out: Path) -> BenchSummary:
    requests = {c: max(4, int(c * level_s * 1000 / (OUTPUT_LEN * ITL_MS))) for c in levels}
    summaries = []
    for c in levels:  # one bench run per level, so each gets its own request count
        cfg = BenchConfig.model_validate({
            "target": {"url": url},
            "workload": {"name": "random", "input_len": 32, "output_len": OUTPUT_LEN},
            "load": {"concurrency": [c], "requests": requests[c], "warmup": 0, "max_lag_ms": 1000},
        })  # fmt: skip
        folder = out / f"C{c}"
        with RunFolder(folder, "bench", cfg.model_dump(mode="json")) as run:
            summaries.append(asyncio.run(run_bench(cfg, run)))
        write_report(folder)
    return BenchSummary(levels=[s.levels[0] for s in summaries], workload="random")


def check(phase: str, summary: BenchSummary) -> tuple[list[str], bool, bool]:
    """Rows of the table, whether every level met the target, whether any GPU was read."""
    rows, ok, seen = [], True, False
    for lv in summary.levels:
        g = lv.gpu_telemetry
        if g is None or g.status != "MEASURED":
            rows.append(f"{phase:<7} {lv.label:<6} UNAVAILABLE: {g.reason if g else 'not sampled'}")
            continue
        for gpu in g.gpus:
            seen = True
            hz = (gpu.samples - 1) / gpu.span_s if gpu.span_s else 0.0
            counter, avg, inst = gpu.energy_counter_j, gpu.power_integral_j, gpu.power_instant_integral_j
            r_avg = avg / counter if avg and counter else None
            r_inst = inst / counter if inst and counter else None
            meets = r_avg is not None and abs(r_avg - 1) <= TARGET
            ok &= meets
            rows.append(f"{phase:<7} {lv.label:<6} {gpu.index:>3} {gpu.samples:>7} {gpu.span_s:>7.1f} {hz:>6.2f} "
                        f"{gpu.power_w.mean or 0:>8.1f} {counter or 0:>11,.1f} {avg or 0:>11,.1f} "
                        f"{_r(r_avg):>7} {_r(r_inst):>7} {g.joules_per_output_token or 0:>8.3f}  "
                        f"{'PASS' if meets else 'FAIL'}")  # fmt: skip
    return rows, ok, seen


def _r(v: float | None) -> str:
    return f"{v:.4f}" if v is not None else "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--level-s", type=float, default=20.0, help="about this long per level")
    ap.add_argument("--settle-s", type=float, default=15.0, help="matmul loop running before the bench starts")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    server, url = start_process(itl_ms=ITL_MS)
    rows, ok, seen = [], True, False
    try:
        for phase in ("idle", "matmul"):
            load = None
            if phase == "matmul":
                span = a.settle_s + len(levels) * (a.level_s + 10) + 60
                load = subprocess.Popen([sys.executable, "-c", MATMUL, str(span)])
                time.sleep(a.settle_s)
                if load.poll() is not None:
                    sys.exit(f"the matmul loop ended before the bench began (exit {load.returncode}): no load")
            try:
                summary = bench(url, levels, a.level_s, a.out / phase)
                if load is not None and load.poll() is not None:
                    sys.exit(f"the matmul loop ended during the bench (exit {load.returncode}): load not held")
            finally:
                if load is not None:
                    load.terminate()
                    load.wait(30)
            got, met, any_gpu = check(phase, summary)
            rows += got
            ok, seen = ok and met, seen or any_gpu
    finally:
        server.terminate()
        server.wait(10)
    print(f"bench against the synthetic server ({OUTPUT_LEN} tokens every {ITL_MS:g} ms per request), "
          f"about {a.level_s:g} s per level; GPU sampled at 10 Hz during each level")  # fmt: skip
    print("ratio = integral of sampled power / energy counter delta over the same span "
          f"(avg: nvmlDeviceGetPowerUsage, inst: NVML_FI_DEV_POWER_INSTANT); target |ratio - 1| <= {TARGET:.0%}")
    print(f"{'phase':<7} {'level':<6} {'gpu':>3} {'samples':>7} {'span s':>7} {'Hz':>6} {'mean W':>8} "
          f"{'counter J':>11} {'integral J':>11} {'avg':>7} {'inst':>7} {'J/token':>8}  verdict")  # fmt: skip
    print("\n".join(rows))
    if not seen:
        print("UNAVAILABLE: no GPU could be read (see the reasons above)")
        sys.exit(8)
    print("PASS: every level's power integral is within 5% of the energy counter" if ok else
          "FAIL: a level's power integral is more than 5% off the energy counter")  # fmt: skip
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
