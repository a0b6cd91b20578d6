"""A trial plan on the synthetic server (continuous batching: ``--batch-slots``), the one the trial tests edit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml


def synthetic_plan(checkpoint: Path, **over: Any) -> dict[str, Any]:
    """Candidates ``two`` (2 slots) and ``eight`` (8 slots); ``misfit`` asks the memory plan for more KV cache
    than any host holds. Each start is a fresh server process, as an engine's would be."""
    serve = [sys.executable, "-m", "seatrial.testing.server", "--port", "{port}", "--model", "{model}",
             "--step-ms", "20", "--itl-ms", "0", "--ttft-ms", "0"]  # fmt: skip
    plan: dict[str, Any] = {
        "deployment": {"checkpoint": str(checkpoint), "gpu_hour_usd": 2.0},
        "serve": {"command": serve, "stop_grace_s": 40, "ready_timeout_s": 60},
        "candidates": [
            {"name": "two", "args": ["--batch-slots", "2"]},
            {"name": "eight", "args": ["--batch-slots", "8"], "plan": {"max_model_len": 1024, "kv_cache_gib": 1, "host_reserve_gib": 1}},
            {"name": "misfit", "args": ["--batch-slots", "8"], "plan": {"max_model_len": 1024, "kv_cache_gib": 100000, "host_reserve_gib": 1}},
        ],
        "profiles": [{"name": "chat", "slo": {"ttft_ms": 150}, "attainment": 0.5, "peak_req_s": 50,
                      "workload": {"workload": "random", "input_len": 8, "output_len": 4, "warmup": 2}}],
        "stages": {
            "hardware": {"duration_s": 0.5},
            "io": {"trials": ["storage.read"], "repeats": 2, "runtime_s": 0.5, "size_mib": 8, "jobs": 1, "max_cv": 0.9},
            "serving": {"trials": ["context"]},
            "capacity": {"starts": 2, "start": 8, "max_rate": 32, "precision": 0.5, "probe_requests": 30, "max_probe_requests": 90,
                         "time_budget": "45s"},
        },
    }  # fmt: skip
    return plan | over


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path
