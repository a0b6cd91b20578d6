"""Plan findings: what does not fit and why, and what vLLM will do that surprises people."""

from __future__ import annotations

from collections.abc import Iterator

from seatrial.plan.arch import Arch
from seatrial.plan.hardware import Hardware
from seatrial.plan.models import PlanResult
from seatrial.plan.source import Source
from seatrial.runs.findings import Finding


def plan_findings(result: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> list[Finding]:
    checks = (_budget, _kv, _load_peak, _host_ram, _fp4_support, _replication, _notes)
    return [f for check in checks for f in check(result, arch, src, stages)]


def _budget(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    for led in r.per_rank:
        fixed = led.weights_gib + led.non_torch_gib + led.activation_gib
        if fixed > led.gpu_budget_gib:
            yield Finding(
                code="weights_exceed_budget",
                severity="error",
                message=f"stage {led.stage} ({led.hardware}): weights {led.weights_gib:.2f} GiB + non-torch "
                f"and activation {led.non_torch_gib + led.activation_gib:.2f} GiB exceed the GPU budget "
                f"{led.gpu_budget_gib:.2f} GiB (gmu {r.gpu_memory_utilization:.2f} x "
                f"{led.memory_gib:.2f} GiB)",
            )
        elif led.remainder_gib < 0:  # a KV size given (--kv-cache-gib) that the budget does not hold
            yield Finding(
                code="kv_exceeds_budget",
                severity="error",
                message=f"stage {led.stage} ({led.hardware}): the KV cache given ({led.kv_cache_gib:.2f} GiB) and "
                f"the weights, non-torch and activation ({fixed:.2f} GiB) exceed the GPU budget "
                f"{led.gpu_budget_gib:.2f} GiB by {-led.remainder_gib:.2f} GiB: the allocation fails at start",
            )
        elif fixed > 0.95 * led.gpu_budget_gib:
            yield Finding(
                code="weights_near_budget",
                severity="warning",
                message=f"stage {led.stage} ({led.hardware}): weights take {led.weights_gib:.2f} of "
                f"{led.gpu_budget_gib:.2f} GiB; almost nothing is left for the KV cache",
            )


def _kv(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    if r.kv_cache_tokens < r.max_model_len:
        yield Finding(
            code="kv_too_small",
            severity="error",
            message=f"the KV cache holds {r.kv_cache_tokens:,} tokens, less than one request of "
            f"max_model_len {r.max_model_len:,}; vLLM refuses to start",
        )
    elif r.max_concurrency < r.max_num_seqs:
        yield Finding(
            code="kv_limits_concurrency",
            severity="info",
            message=f"at {r.max_model_len:,} tokens per request the KV cache serves {r.max_concurrency:.2f} "
            f"requests at once, fewer than max_num_seqs {r.max_num_seqs}",
        )


def _load_peak(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    if src.largest_shard is None:
        yield Finding(
            code="load_peak_unknown",
            severity="info",
            message="weights estimated from config.json; shard sizes unknown, load peak not checked",
        )
        return
    for led in r.per_rank:
        if led.host_free_gib is None or led.load_peak_gib is None:
            continue
        if led.load_peak_gib > led.host_free_gib:
            yield Finding(
                code="load_peak_exceeds_host",
                severity="error",
                message=f"stage {led.stage} ({led.hardware}, unified memory): the loader opens "
                f"{led.load_peak_file} ({led.load_peak_gib:.2f} GiB) whole while the GPU reservation "
                f"({led.gpu_budget_gib:.2f} GiB) is held; the host share is {led.host_share_gib:.2f} GiB, "
                f"{led.host_free_gib:.2f} GiB after the {led.host_reserve_gib:g} GiB reserve: the host "
                "swaps and can freeze (seed 000: 34 minutes)",
            )


def _host_ram(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    for led, hw in zip(r.per_rank, stages, strict=True):
        if not led.host_weights_gib:
            continue
        room = hw.host_memory_bytes / 1024**3 - led.host_reserve_gib
        if hw.unified:
            yield Finding(
                code="host_embeddings_on_unified",
                severity="warning",
                message=f"stage {led.stage} ({led.hardware}) is unified memory: embeddings in host RAM "
                f"({led.host_weights_gib:.2f} GiB) still come out of the same pool",
            )
        yield Finding(
            code="host_embeddings",
            severity="error" if led.host_weights_gib > room else "info",
            message=f"stage {led.stage} ({led.hardware}): {led.host_weights_gib:.2f} GiB of embeddings in "
            f"host RAM, {room:.2f} GiB available after the reserve",
        )


def _fp4_support(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    for led, hw in zip(r.per_rank, stages, strict=True):
        fp4 = sum(n for p, n in led.params_by_precision.items() if p in ("NVFP4", "MXFP4"))
        if fp4 and not hw.native_fp4 and not hw.cpu:
            yield Finding(
                code="fp4_not_native",
                severity="warning",
                message=f"stage {led.stage} ({led.hardware}) has no FP4 tensor cores but holds "
                f"{fp4 / 1e9:.2f} B FP4 parameters: re-quantize them (INT4 W4A16 or BF16) or rely on a "
                "weight-only fallback kernel",
            )


def _replication(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    attention = [k for k in arch.layer_kinds if k in ("full", "sliding", "chunked")]
    if attention and r.tp > arch.num_kv_heads:
        yield Finding(
            code="kv_heads_replicated",
            severity="info",
            message=f"TP {r.tp} exceeds the {arch.num_kv_heads} KV heads: each rank keeps one KV head, "
            f"so KV is replicated {r.tp // arch.num_kv_heads}x",
        )
    if "mla" in arch.layer_kinds and r.tp > 1:
        yield Finding(
            code="mla_latent_replicated",
            severity="info",
            message=f"MLA: the latent KV ({arch.mla_head_size} values per token and layer) is replicated "
            f"on all {r.tp} TP ranks",
        )


def _notes(r: PlanResult, arch: Arch, src: Source, stages: list[Hardware]) -> Iterator[Finding]:
    mtp = sum(i.nbytes for i in src.items if i.component == "mtp")
    if mtp:
        yield Finding(
            code="mtp_not_counted",
            severity="info",
            message=f"MTP weights ({mtp / 1024**3:.2f} GiB) load only with speculative decoding; not counted",
        )
