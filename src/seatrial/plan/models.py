"""Plan request and result models (JSON field names are a contract)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from seatrial.errors import as_flag, config_errors
from seatrial.plan.kv import KvCapacity
from seatrial.runs.findings import Finding

GIB = 1024**3


class PlanRequest(BaseModel):
    """What to plan: a checkpoint directory or a config.json, the hardware, and vLLM's settings.

    ``None`` means vLLM's default: ``max_model_len`` from the config, ``block_size`` 16 (128 on CPU),
    ``max_num_seqs`` / ``max_num_batched_tokens`` by device memory as vLLM's API server picks them.
    ``kv_cache_gib`` bypasses the memory ledger like vLLM's ``kv_cache_memory_bytes``.
    """

    model_config = ConfigDict(extra="forbid")

    checkpoint: Path | None = None
    config: Path | None = None
    hardware: str = "local"
    gpu_memory_gib: float | None = Field(default=None, gt=0)
    nodes: int = Field(default=1, ge=1)
    gpus_per_node: int | None = Field(default=None, ge=1)
    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    kv_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    dtype: str = "auto"
    block_size: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    kv_cache_gib: float | None = Field(default=None, ge=0)
    host_reserve_gib: float = Field(default=12.0, ge=0)
    non_torch_gib: float = Field(default=1.0, ge=0)
    enable_prefix_caching: bool = True
    pp_layer_partition: list[int] | None = None
    stage_hardware: list[str] | None = None
    embeddings_on_host: bool = False


def build_request(**fields: Any) -> PlanRequest:
    """A PlanRequest, with a ConfigError naming the flag (``--tp``) instead of a validation traceback."""
    with config_errors(label=lambda loc: "DIR" if loc == "checkpoint" else as_flag(loc)):
        return PlanRequest(**fields)


class RankLedger(BaseModel):
    """One PP stage's per-rank memory ledger (every rank of a stage is alike), in GiB.

    ``gpu_budget_gib = gpu_memory_utilization x memory``; ``kv_cache_gib = budget - weights - non_torch
    - activation`` unless ``--kv-cache-gib`` set it; ``remainder_gib`` is what is left after all four.
    On unified memory ``host_share_gib = memory - budget`` is what OS, desktop and loader share, and
    ``host_free_gib = host_share - host_reserve``; the loader's ``load_peak_gib`` must fit in it.
    """

    model_config = ConfigDict(extra="forbid")

    stage: int
    hardware: str
    ranks: int
    layers: list[int]
    memory_gib: float
    gpu_budget_gib: float
    weights_gib: float
    non_torch_gib: float
    activation_gib: float
    kv_cache_gib: float
    kv_cache_tokens: int
    remainder_gib: float
    unified: bool
    host_share_gib: float | None
    host_reserve_gib: float
    host_free_gib: float | None
    host_weights_gib: float
    load_peak_gib: float | None
    load_peak_file: str | None
    weights_by_component_gib: dict[str, float]
    params_by_precision: dict[str, int]


class LayoutRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: int
    tp: int
    pp: int
    dp: int
    ep: int
    fits: bool
    weights_gib: float
    kv_cache_tokens: int
    max_concurrency: float
    reason: str


class PlanResult(BaseModel):
    """``kv_cache_tokens`` and ``max_concurrency`` mean what vLLM's KV-cache log line means (per engine)."""

    model_config = ConfigDict(extra="forbid")

    fits: bool
    source: str
    hardware: str
    nodes: int
    tp: int
    pp: int
    dp: int
    ep: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_cache_tokens: int
    max_concurrency: float
    per_rank: list[RankLedger]
    kv: KvCapacity
    findings: list[Finding]
    search: list[LayoutRow] | None = None

    def render_ledger(self) -> str:
        """The per-rank ledger as plain text, in the layout of seed 000's table."""
        lines = []
        for r in self.per_rank:
            lines.append(f"stage {r.stage}: {r.ranks} x {r.hardware}, layers {r.layers[0]}-{r.layers[1] - 1}")
            lines.append(f"  GPU budget (gmu {self.gpu_memory_utilization:.2f})  {r.gpu_budget_gib:8.2f} GiB")
            lines.append(f"  ├ weights                {r.weights_gib:8.2f} GiB")
            lines.append(f"  ├ non-torch + activation {r.non_torch_gib + r.activation_gib:8.2f} GiB")
            lines.append(
                f"  ├ KV cache               {r.kv_cache_gib:8.2f} GiB  ({r.kv_cache_tokens:,} tokens)"
            )
            lines.append(f"  └ remainder              {r.remainder_gib:8.2f} GiB")
            if r.host_share_gib is not None:
                lines.append(f"  host share               {r.host_share_gib:8.2f} GiB")
                lines.append(f"  ├ reserve (OS, desktop)  {r.host_reserve_gib:8.2f} GiB")
                lines.append(f"  └ free for the loader    {r.host_free_gib or 0:8.2f} GiB")
            if r.load_peak_file:
                lines.append(f"  load peak {r.load_peak_gib:.2f} GiB ({r.load_peak_file})")
            if r.host_weights_gib:
                lines.append(f"  host RAM embeddings      {r.host_weights_gib:8.2f} GiB")
        verdict = "fits" if self.fits else "does NOT fit"
        lines.append(
            f"{verdict}: KV cache {self.kv_cache_tokens:,} tokens, max concurrency "
            f"{self.max_concurrency:.2f}x at {self.max_model_len:,} tokens"
        )
        return "\n".join(lines)
