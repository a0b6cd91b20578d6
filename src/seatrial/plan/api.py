"""The single call a launch guard makes before starting an engine."""

from __future__ import annotations

from pathlib import Path

from seatrial.plan.hardware import resolve
from seatrial.plan.models import PlanResult, build_request
from seatrial.plan.planner import plan


def check_launch(
    checkpoint_dir: Path | str,
    *,
    hardware: str = "local",
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    nodes: int | None = None,
    host_reserve_gib: float = 12.0,
    kv_cache_gib: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    kv_cache_dtype: str = "auto",
    weights_from_config: bool = False,
) -> PlanResult:
    """Plan ``checkpoint_dir`` with vLLM's launch settings; ``result.fits`` False means do not launch.

    ``weights_from_config``: the weights are estimated from its config.json, not measured from its
    safetensors (a ``--load-format dummy`` launch makes random weights of the full size from the config).

    ``nodes`` defaults to as many nodes of the profile as the ranks need (two GB10 for TP=2).
    ``result.findings`` say why; ``result.render_ledger()`` is the per-rank ledger as text.
    """
    world = tensor_parallel_size * pipeline_parallel_size
    per_node = resolve(hardware).gpus_per_node
    source = (
        {"config": Path(checkpoint_dir) / "config.json"}
        if weights_from_config
        else {"checkpoint": Path(checkpoint_dir)}
    )
    request = build_request(
        **source,
        hardware=hardware,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
        tp=tensor_parallel_size,
        pp=pipeline_parallel_size,
        nodes=nodes or -(-world // per_node),
        host_reserve_gib=host_reserve_gib,
        kv_cache_gib=kv_cache_gib,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_dtype=kv_cache_dtype,
    )
    return plan(request)
