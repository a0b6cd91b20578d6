"""Seed 000 on two GB10: the BF16-PLE replica does not fit (the 95 GiB shard), the converted one does,
and the heterogeneous PP plan leaves about 32.16 GiB of weights per GB10."""

from __future__ import annotations

from pathlib import Path

from seatrial.checkpoint import AuditReport
from seatrial.plan import PlanRequest, check_launch, plan
from seatrial.plan.source import Source

GIB = 1024**3
BASE = {
    "hardware": "gb10",
    "nodes": 2,
    "tp": 2,
    "gpu_memory_utilization": 0.70,
    "max_model_len": 16384,
    "max_num_seqs": 8,
    "max_num_batched_tokens": 2048,
}


def test_bf16_ple_replica_does_not_fit_naming_the_shard(seed000: Path, seed000_source: Source) -> None:
    r = plan(PlanRequest(checkpoint=seed000, **BASE), seed000_source)
    assert not r.fits
    (led,) = r.per_rank
    assert (led.gpu_budget_gib, led.host_share_gib, led.host_free_gib) == (84.7, 36.3, 24.3)
    assert (
        led.load_peak_file == "model-00002-of-00017.safetensors" and round(led.load_peak_gib or 0, 2) == 95.37
    )
    (peak,) = [f for f in r.findings if f.code == "load_peak_exceeds_host"]
    assert peak.severity == "error" and "model-00002-of-00017.safetensors (95.37 GiB)" in peak.message
    assert led.weights_gib > 0.97 * led.gpu_budget_gib  # seed: BF16 PLE leaves no room for KV


def test_converted_replica_fits_with_half_its_bytes_per_rank(
    seed000_converted: Path, seed000_converted_source: Source, seed000_converted_report: AuditReport
) -> None:
    r = plan(PlanRequest(checkpoint=seed000_converted, **BASE), seed000_converted_source)
    assert r.fits, r.findings
    (led,) = r.per_rank
    half = seed000_converted_report.total_bytes / 2 / GIB
    assert abs(led.weights_gib - half) / half < 0.002  # replicated norms and gates only
    assert round(half, 2) == 59.15  # seed 000: 59.15 GiB per GB10 today
    assert led.load_peak_gib is not None and led.load_peak_gib < 5
    assert r.kv_cache_tokens == int(r.kv.num_blocks / r.kv.blocks_per_request * 16384)
    assert 0 <= r.kv.max_concurrency * 16384 - r.kv_cache_tokens < 1


def test_heterogeneous_pp_leaves_32_gib_per_gb10(
    seed000_converted: Path, seed000_converted_source: Source
) -> None:
    req = PlanRequest(
        checkpoint=seed000_converted,
        pp=2,
        pp_layer_partition=[3, 45],
        stage_hardware=["rtx-3090x2", "gb10x2"],
        embeddings_on_host=True,
        **{k: v for k, v in BASE.items() if k not in ("hardware", "nodes")},
    )
    r = plan(req, seed000_converted_source)
    assert r.fits, r.findings
    first, second = r.per_rank
    assert (first.hardware, first.layers, second.hardware, second.layers) == (
        "rtx-3090",
        [0, 3],
        "gb10",
        [3, 48],
    )
    assert abs(second.weights_gib - 32.16) < 0.1
    assert "ple" not in first.weights_by_component_gib and round(first.host_weights_gib, 2) == 47.68
    assert "lm_head" in second.weights_by_component_gib and "embed_tokens" in first.weights_by_component_gib
    (fp4,) = [f for f in r.findings if f.code == "fp4_not_native"]  # seed: 3 layers, about 7.55 B parameters
    assert fp4.severity == "warning" and "stage 0 (rtx-3090)" in fp4.message and "7.55 B" in fp4.message
    assert first.params_by_precision["NVFP4"] == 3 * 512 * 3 * 2560 * 640


def test_heterogeneous_pp_with_bf16_ple_on_host(seed000: Path, seed000_source: Source) -> None:
    req = PlanRequest(
        checkpoint=seed000,
        pp=2,
        pp_layer_partition=[3, 45],
        stage_hardware=["rtx-3090x2", "gb10x2"],
        embeddings_on_host=True,
        **{k: v for k, v in BASE.items() if k not in ("hardware", "nodes")},
    )
    r = plan(req, seed000_source)
    first, second = r.per_rank
    assert second.hardware == "gb10" and second.load_peak_file == "model-00002-of-00017.safetensors"
    assert round(first.host_weights_gib, 2) == 95.37  # BF16 PLE in the 3090 node's 128 GB RAM
    codes = {(f.code, f.severity) for f in r.findings}
    assert ("host_embeddings", "info") in codes
    assert ("load_peak_exceeds_host", "error") in codes  # the GB10s still open the 95 GiB shard


def test_check_launch_is_the_guard_call(seed000: Path) -> None:
    r = check_launch(
        seed000,
        hardware="gb10",
        gpu_memory_utilization=0.70,
        max_model_len=16384,
        tensor_parallel_size=2,
        host_reserve_gib=12,
    )
    assert not r.fits and r.nodes == 2
    assert "model-00002-of-00017.safetensors" in r.render_ledger()
    assert "does NOT fit" in r.render_ledger()
