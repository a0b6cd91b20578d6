"""Other KV-capacity estimators, run from their own throwaway venvs for side-by-side numbers.

hf-mem (0.5.6) takes only ``--model-id`` on the Hugging Face Hub, so it cannot read a local
config; it is reported as such rather than sent onto the network. vllm-wizard (0.2.0) reads a
local path: with ``--vram-gb`` set to (its weights plus the KV budget) / 0.98, utilization 0.98 and
no overhead or headroom, its ``max_concurrency_at_context`` times max_model_len is its KV token capacity.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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
