"""The prefix-cache trial's TTFT gain against the limit set by its own counters, on real vLLM-CPU.

For each prefix length, the ``prefix-cache`` trial (2 prefixes x 9 questions, C=2) reports the
server's hit rate (tokens served from cache / tokens queried) and the paired median TTFT gain over
the same questions with unshared prefixes. If prefill time were proportional to uncached tokens,
the gain could reach the hit rate and no more: the printed ratio gain / hit rate says how much of
that physical limit the cache delivered (TTFT also holds queueing, scheduling and one decode step,
which the cache cannot remove, so the ratio stays below 1).

    .venv/bin/python benchmarks/prefix_cache_gain.py [--url URL] [--lengths 256,1024,3072]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _engine import vllm_server

from seatrial.trials import run_accept

PROFILE = """
trials:
  prefix-cache: {{num_prefixes: 2, prefix_len: {n}, questions_per_prefix: 9, question_len: 32,
                 output_len: 2, concurrency: 2}}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--lengths", default="256,1024,3072")
    opts = ap.parse_args()
    with vllm_server(opts.url, max_num_seqs=4) as (url, _), tempfile.TemporaryDirectory() as tmp:
        print(
            f"{'prefix':>6} {'hit rate':>9} {'expected':>9} {'TTFT gain':>10} {'95% CI':>16} {'gain/hit':>9}"
        )
        for n in (int(x) for x in opts.lengths.split(",")):
            profile = Path(tmp) / f"p{n}.yaml"
            profile.write_text(PROFILE.format(n=n))
            trial = run_accept(url, profile=profile, trials=["prefix-cache"])["trials"][0]
            ev = trial["evidence"]
            gain = ev["ttft_gain_pct"]
            hit = ev["hit_rate"] or 0.0
            ratio = gain["value"] / (hit * 100) if hit else float("nan")
            ci = f"{gain['ci_low']:.1f}..{gain['ci_high']:.1f}%"
            print(
                f"{n:>6} {hit:>9.1%} {ev['expected_hit_rate']:>9.1%} {gain['value']:>9.1f}% {ci:>16} {ratio:>9.2f}"
                f"  ({trial['functional']}/{trial['performance']})",
                flush=True,
            )


if __name__ == "__main__":
    main()
