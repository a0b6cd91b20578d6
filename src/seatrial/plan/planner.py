"""``seatrial plan``: does a model fit, per rank, before a byte is loaded."""

from __future__ import annotations

from seatrial.errors import ConfigError
from seatrial.plan.arch import DTYPE_BYTES, Arch
from seatrial.plan.findings import plan_findings
from seatrial.plan.hardware import GIB, Hardware, cpu_has_flag, parse_stage, resolve
from seatrial.plan.kv import KvCapacity, KvSettings, capacity
from seatrial.plan.models import PlanRequest, PlanResult, RankLedger
from seatrial.plan.source import Source, load_source
from seatrial.plan.weights import StageWeights, pp_partition, stage_ranges, stage_weights


def plan(req: PlanRequest, source: Source | None = None) -> PlanResult:
    """Plan ``req``; pass ``source`` to reuse an already-read checkpoint (``--search`` does)."""
    src = source or load_source(req.checkpoint, req.config, req.dtype)
    arch = src.arch
    stages = _stage_hardware(req)
    mml = req.max_model_len or arch.max_position_embeddings
    cpu = stages[0].cpu
    mem = min(h.memory_bytes for h in stages)
    mns, mnbt = _scheduler_defaults(mem, cpu)
    mns, mnbt = req.max_num_seqs or mns, req.max_num_batched_tokens or mnbt
    ranges = stage_ranges(pp_partition(arch.num_layers, req.pp, req.pp_layer_partition))
    weights = stage_weights(src.items, ranges, req.tp, req.dp, req.ep, req.embeddings_on_host)
    activation = 0 if cpu else _activation_bytes(arch, req.tp, mnbt, mns)
    non_torch = 0 if cpu else int(req.non_torch_gib * GIB)
    budgets = [int(req.gpu_memory_utilization * h.memory_bytes) for h in stages]
    kv_bytes = [
        int(req.kv_cache_gib * GIB)
        if req.kv_cache_gib is not None
        else b - w.gpu_bytes_per_rank - non_torch - activation
        for b, w in zip(budgets, weights, strict=True)
    ]
    kv_dtype = arch.dtype_bytes if req.kv_cache_dtype == "auto" else DTYPE_BYTES.get(req.kv_cache_dtype)
    if kv_dtype is None:
        raise ConfigError(f"--kv-cache-dtype: unsupported {req.kv_cache_dtype!r}")
    block = req.block_size or (_cpu_block_size(arch) if cpu else 16)
    settings = KvSettings(
        tp=req.tp,
        block_size=block,
        kv_dtype_bytes=kv_dtype,
        max_model_len=mml,
        max_num_batched_tokens=mnbt,
        in_flight_batches=req.pp if (cpu or req.pp > 1) else 2,
        prefix_caching=req.enable_prefix_caching,
        kernel_block_alignment=block if cpu else 16,
        ssm_dtype_bytes=_ssm_dtype_bytes(req.mamba_ssm_cache_dtype, arch, cpu),
    )
    kv = capacity(arch, settings, [(r, max(b, 0)) for r, b in zip(ranges, kv_bytes, strict=True)])
    ledgers = [
        _ledger(
            i, hw, req, w, budgets[i], kv_bytes[i], non_torch, activation, kv.stage_blocks[i], kv, mml, src
        )
        for i, (hw, w) in enumerate(zip(stages, weights, strict=True))
    ]
    result = PlanResult(
        fits=True,
        source=src.label,
        hardware=",".join(sorted({h.name for h in stages})),
        nodes=req.nodes,
        tp=req.tp,
        pp=req.pp,
        dp=req.dp,
        ep=req.ep,
        gpu_memory_utilization=req.gpu_memory_utilization,
        max_model_len=mml,
        max_num_seqs=mns,
        max_num_batched_tokens=mnbt,
        block_size=kv.block_size,
        kv_cache_tokens=kv.kv_cache_tokens,
        max_concurrency=round(kv.max_concurrency, 4),
        per_rank=ledgers,
        kv=kv,
        findings=[],
    )
    result.findings.extend(plan_findings(result, arch, src, stages))
    result.fits = not any(f.severity == "error" for f in result.findings)
    return result


def _stage_hardware(req: PlanRequest) -> list[Hardware]:
    if req.ep not in (1, req.tp * req.dp):
        raise ConfigError(f"--ep {req.ep}: vLLM's expert parallelism spans TP x DP = {req.tp * req.dp} ranks")
    if req.stage_hardware:
        if len(req.stage_hardware) != req.pp:
            raise ConfigError(f"--stage-hardware names {len(req.stage_hardware)} stages but --pp is {req.pp}")
        stages = []
        for text in req.stage_hardware:
            hw, count = parse_stage(text)
            if count != req.tp * req.dp:
                raise ConfigError(f"--stage-hardware {text}: a stage holds TP x DP = {req.tp * req.dp} ranks")
            stages.append(hw)
        return stages
    hw = resolve(req.hardware, req.gpu_memory_gib)
    per_node = req.gpus_per_node or hw.gpus_per_node
    world = req.tp * req.pp * req.dp
    if world > req.nodes * per_node:
        raise ConfigError(
            f"TP x PP x DP = {world} ranks but {req.nodes} node(s) x {per_node} GPU(s) "
            f"= {req.nodes * per_node}"
        )
    return [hw] * req.pp


def _cpu_block_size(arch: Arch) -> int:
    """vLLM-CPU's block size: 128, except 16 for MLA on its reference kernel (hosts without AMX)."""
    return 16 if "mla" in arch.layer_kinds and not cpu_has_flag("amx_tile") else 128


def _ssm_dtype_bytes(name: str, arch: Arch, cpu: bool) -> int:
    """vLLM's mamba_ssm_cache_dtype: ``auto`` is the model dtype, except that vLLM-CPU on a host with
    AVX512-BF16 resets it to float32 for its accelerated GDN backend."""
    if name == "auto":
        return 4 if cpu and cpu_has_flag("avx512_bf16") else arch.dtype_bytes
    if name not in ("float32", "bfloat16", "float16"):
        raise ConfigError(f"--mamba-ssm-cache-dtype: unsupported {name!r}")
    return 4 if name == "float32" else 2


def _scheduler_defaults(memory_bytes: int, cpu: bool) -> tuple[int, int]:
    """vLLM's API-server defaults for (max_num_seqs, max_num_batched_tokens) by device memory."""
    if not cpu and memory_bytes >= 160 * GIB:
        return 1024, 16384
    if not cpu and memory_bytes >= 70 * GIB:
        return 1024, 8192
    return 256, 2048


def _activation_bytes(arch: Arch, tp: int, mnbt: int, mns: int) -> int:
    """Allowance for the profiling forward pass: hidden states and the widest projection output for
    ``max_num_batched_tokens`` tokens, plus FP32 logits for ``max_num_seqs`` sequences. An estimate."""
    q = arch.num_heads * arch.head_dim + 2 * arch.num_kv_heads * arch.head_dim
    mlp = max(2 * arch.intermediate_size, 2 * arch.experts_per_token * arch.moe_intermediate_size)
    width = max(q, mlp) // tp
    return mnbt * arch.dtype_bytes * (2 * arch.hidden_size + width) + mns * arch.vocab_size * 4


def _ledger(
    i: int,
    hw: Hardware,
    req: PlanRequest,
    w: StageWeights,
    budget: int,
    kv_bytes: int,
    non_torch: int,
    activation: int,
    blocks: int,
    kv: KvCapacity,
    mml: int,
    src: Source,
) -> RankLedger:
    kv_real = max(kv_bytes, 0)
    used = w.gpu_bytes_per_rank + non_torch + activation + kv_real
    share = hw.memory_bytes - budget if hw.unified else None
    reserve = int(req.host_reserve_gib * GIB)
    peak = src.largest_shard
    return RankLedger(
        stage=i,
        hardware=hw.name,
        ranks=req.tp * req.dp,
        layers=[w.layers.start, w.layers.stop],
        memory_gib=_g(hw.memory_bytes),
        gpu_budget_gib=_g(budget),
        weights_gib=_g(w.gpu_bytes_per_rank),
        non_torch_gib=_g(non_torch),
        activation_gib=_g(activation),
        kv_cache_gib=_g(kv_real),
        kv_cache_tokens=int(blocks / kv.blocks_per_request * mml) if kv.blocks_per_request else 0,
        remainder_gib=_g(budget - used),
        unified=hw.unified,
        host_share_gib=_g(share) if share is not None else None,
        host_reserve_gib=req.host_reserve_gib,
        host_free_gib=_g(share - reserve) if share is not None else None,
        host_weights_gib=_g(w.host_bytes_per_node),
        load_peak_gib=_g(peak[1]) if peak else None,
        load_peak_file=peak[0] if peak else None,
        params_by_precision=w.params_by_precision,
        weights_by_component_gib={
            k: _g(v) for k, v in sorted(w.by_component.items(), key=lambda kv_: -kv_[1])
        },
    )


def _g(nbytes: int) -> float:
    return round(nbytes / GIB, 4)
