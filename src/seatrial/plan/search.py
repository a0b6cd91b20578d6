"""``--search``: every TP / PP / DP / EP layout over 1..N nodes, those that fit first."""

from __future__ import annotations

from seatrial.errors import ConfigError
from seatrial.plan.hardware import resolve
from seatrial.plan.models import LayoutRow, PlanRequest, PlanResult
from seatrial.plan.planner import plan
from seatrial.plan.source import load_source


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def search(req: PlanRequest) -> PlanResult:
    """Plan every layout that uses whole nodes; return the request's own plan with ``search`` rows."""
    if req.stage_hardware:
        raise ConfigError("--search plans one hardware kind; drop --stage-hardware")
    src = load_source(req.checkpoint, req.config, req.dtype)
    per_node = req.gpus_per_node or resolve(req.hardware, req.gpu_memory_gib).gpus_per_node
    moe = src.arch.num_experts > 0
    rows = []
    for nodes in range(1, req.nodes + 1):
        world = nodes * per_node
        for tp in _divisors(world):
            for pp in _divisors(world // tp):
                if pp > src.arch.num_layers:
                    continue
                dp = world // (tp * pp)
                for ep in sorted({1, tp * dp} if moe else {1}):
                    layout = req.model_copy(
                        update={
                            "nodes": nodes,
                            "tp": tp,
                            "pp": pp,
                            "dp": dp,
                            "ep": ep,
                            "pp_layer_partition": None,
                        }
                    )
                    rows.append(_row(plan(layout, src), nodes))
    rows.sort(key=lambda r: (not r.fits, r.nodes, -r.kv_cache_tokens))
    base = plan(req, src)
    base.search = rows
    return base


def _row(result: PlanResult, nodes: int) -> LayoutRow:
    errors = list(dict.fromkeys(f.code for f in result.findings if f.severity == "error"))
    return LayoutRow(
        nodes=nodes,
        tp=result.tp,
        pp=result.pp,
        dp=result.dp,
        ep=result.ep,
        fits=result.fits,
        weights_gib=max(r.weights_gib for r in result.per_rank),
        kv_cache_tokens=result.kv_cache_tokens,
        max_concurrency=result.max_concurrency,
        reason=",".join(errors) or "fits",
    )
