"""Benchmark: a tiny fast-start vLLM-CPU with torch's default threads (one per core: vLLM's CPU worker
refuses its own "reducing Torch threads to 1 for serving" under the uni executor) against the same start
with ``OMP_NUM_THREADS=1``, measured in the same run.

Starts alternate (ABBA over ROUNDS rounds, so drift hits both alike). In each start, once ready, ``seatrial
bench`` runs 64 requests at C=1 and C=8 (64 tokens in, 32 out); the engine's CPU time over the bench is read
with psutil (the API server and its engine core, every thread). Prints each start, then for each measure
the change from default threads to one, by Welch's t on the logs with one value per start, and its 95%
interval (``seatrial.stats.effects.welch_log``, the experiment's own method). Run on a quiet machine:
``.venv/bin/python benchmarks/engine_threads.py [ROUNDS]`` (default 4: 8 starts, about 4 minutes here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine, make_tiny_model
from seatrial.stats.effects import welch_log

ROOT = Path(__file__).resolve().parents[1]


class OneThread(EngineSpec):
    """The same fast start with torch on one thread."""

    def env(self) -> dict[str, str]:
        return super().env() | {"OMP_NUM_THREADS": "1"}


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (all threads of each), read now."""
    root = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])


def measure(spec: EngineSpec, tmp: Path, name: str) -> dict[str, float]:
    """tok/s at C=1 and C=8, and the engine's CPU seconds per 1,000 output tokens, of one fresh start."""
    with LocalEngine(spec, tmp / f"{name}.log") as engine:
        before = tree_cpu_s(engine.proc.pid)
        done = subprocess.run([str(ROOT / ".venv/bin/seatrial"), "bench", "--url", engine.url, "--input-len", "64",
                               "--output-len", "32", "--ignore-eos", "--concurrency", "1,8", "--requests", "64",
                               "--json", str(tmp / f"{name}.json")], capture_output=True, text=True)  # fmt: skip
        cpu = tree_cpu_s(engine.proc.pid) - before
    if done.returncode != 0:
        sys.exit(f"bench failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    levels = {lv["concurrency"]: lv for lv in json.loads((tmp / f"{name}.json").read_text())["levels"]}
    tokens = sum(lv["output_tokens"] for lv in levels.values())
    return {"tok_s_c1": levels[1]["output_tok_s"], "tok_s_c8": levels[8]["output_tok_s"],
            "cpu_s_per_1k_tokens": 1000 * cpu / tokens}  # fmt: skip


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    os.environ.pop("OMP_NUM_THREADS", None)  # "default" is torch's own choice, whatever the caller set
    runs: dict[str, list[dict[str, float]]] = {"default": [], "one-thread": []}
    with tempfile.TemporaryDirectory(prefix="seatrial-threads-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        specs = {"default": EngineSpec(model_dir=model, serve_nice=SERVE_NICE),
                 "one-thread": OneThread(model_dir=model, serve_nice=SERVE_NICE)}  # fmt: skip
        for r in range(rounds):
            order = list(specs) if r % 4 in (0, 3) else list(reversed(specs))  # ABBA
            for name in order:
                m = measure(specs[name], Path(tmp), f"{name}-{r}")
                runs[name].append(m)
                print(f"round {r + 1}: {name:<10} C=1 {m['tok_s_c1']:6.0f} tok/s, C=8 {m['tok_s_c8']:6.0f} tok/s, "
                      f"engine {m['cpu_s_per_1k_tokens']:.2f} CPU-s per 1,000 tokens", flush=True)  # fmt: skip
    print(f"\none thread against default, Welch on logs, one value per start ({rounds} + {rounds}), 95% interval")
    for key, higher in (("tok_s_c1", True), ("tok_s_c8", True), ("cpu_s_per_1k_tokens", False)):
        e = welch_log([m[key] for m in runs["default"]], [m[key] for m in runs["one-thread"]], higher_is_better=True)
        lo, hi = e.ci_pct  # the change in the value itself, whichever way is better
        span = f"[{lo:+.1f}%, {hi:+.1f}%]" if lo is not None and hi is not None else "(no interval)"
        gain = f"{e.gain_pct:+6.1f}%" if e.gain_pct is not None else "    n/a"
        print(f"  {key:<20} {gain} {span}  ({'higher' if higher else 'lower'} is better)")


if __name__ == "__main__":
    main()
