"""Benchmark: the precision trial's achieved TFLOP/s against a plain torch matmul loop, same GPU, same run.

For each path (BF16, FP8 per-tensor, FP8 row-wise) it alternates a plain loop (the torch call written
out, timed with CUDA events) and the trial's own measurement (seatrial.hw.precision.run_variant), and
prints the ratio trial / plain. Target: >= 0.95 (the trial adds no overhead).

    PYTHONPATH=src python benchmarks/hw_matmul_vs_torch.py --seconds 8 --size 8192
"""

from __future__ import annotations

import argparse
import statistics

import torch

from seatrial.hw.matmul import quantize_fp8
from seatrial.hw.precision import run_variant

TARGET_RATIO = 0.95


def plain_tflops(variant: str, size: int, seconds: float, device: torch.device) -> float:
    """A plain loop of the same product on fresh operands, timed with CUDA events."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    if variant == "bf16":
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)

        def step() -> torch.Tensor:
            return a16 @ b16
    else:
        rowwise = variant == "fp8_rowwise"
        a8, sa = quantize_fp8(a, rowwise)
        b8, sb = quantize_fp8(b, rowwise)
        sb = sb.reshape(1, -1).contiguous() if rowwise else sb
        b8t = b8.t()

        def step() -> torch.Tensor:
            return torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    for _ in range(3):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    torch.cuda.synchronize(device)
    iterations = max(1, int(seconds * 1000 / start.elapsed_time(end)))
    start.record()
    for _ in range(iterations):
        step()
    end.record()
    torch.cuda.synchronize(device)
    return 2 * size**3 * iterations / (start.elapsed_time(end) / 1000) / 1e12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per measurement")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    device = torch.device("cuda", 0)
    print(
        f"GPU: {torch.cuda.get_device_name(device)}; torch {torch.__version__}; M=N=K={args.size}; "
        f"{args.seconds} s per measurement, {args.rounds} alternating rounds"
    )
    print(f"{'path':<16}{'plain TFLOP/s':>15}{'trial TFLOP/s':>15}{'ratio':>8}  target >= {TARGET_RATIO}")
    for variant in ("bf16", "fp8_tensorwise", "fp8_rowwise"):
        plain, trial = [], []
        for _ in range(args.rounds):
            plain.append(plain_tflops(variant, args.size, args.seconds, device))
            trial.append(run_variant(variant, device, args.size, args.seconds)["tflops"])
        p, t = statistics.mean(plain), statistics.mean(trial)
        verdict = "ok" if t / p >= TARGET_RATIO else "BELOW TARGET"
        print(f"{variant:<16}{p:>15.1f}{t:>15.1f}{t / p:>8.3f}  {verdict}")


if __name__ == "__main__":
    main()
