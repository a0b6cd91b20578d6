"""What the trials read from the server besides request timings: ``max_model_len`` from
``/v1/models`` (llama.cpp: the context of one slot, its ``meta.n_ctx``), the KV cache layout from ``vllm:cache_config_info`` (block size and block count),
counters in canonical names, and any KV offload counters (metric names containing ``offload``)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from seatrial.errors import ServerError
from seatrial.load.models import listed_models
from seatrial.runs.summaries.accept import ServerFacts
from seatrial.server.capacity import cache_info, kv_from_labels
from seatrial.server.prom import parse_metrics

__all__ = ["ServerInfo", "Snapshot", "cache_info", "offload_counters", "server_info", "snapshot"]
OFFLOAD_WORD = "offload"


@dataclass
class Snapshot:
    """One read of ``/metrics``: canonical values plus summed offload counters (by metric name)."""

    values: dict[str, float] = field(default_factory=dict)
    offload: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def delta(self, later: Snapshot, key: str) -> float | None:
        if key not in self.values or key not in later.values:
            return None
        return later.values[key] - self.values[key]

    def offload_delta(self, later: Snapshot) -> dict[str, float]:
        return {k: later.offload[k] - self.offload.get(k, 0.0) for k in later.offload}


@dataclass
class ServerInfo:
    max_model_len: int | None = None
    block_size: int | None = None
    num_blocks: int | None = None
    cache_labels: dict[str, str] = field(default_factory=dict)

    @property
    def kv_capacity_tokens(self) -> int | None:
        """The engine's own figure (``kv_cache_size_tokens``), else blocks x block size."""
        kv = kv_from_labels(self.cache_labels)
        if kv is not None:
            return kv.tokens
        if self.block_size and self.num_blocks:
            return self.block_size * self.num_blocks
        return None

    @property
    def kv_offloading_size(self) -> str | None:
        """vLLM's ``--kv-offloading-size`` as the server reports it; None when it offloads nothing."""
        v = self.cache_labels.get("kv_offloading_size")
        return None if v in (None, "", "None", "0") else v

    @property
    def prefix_caching(self) -> bool | None:
        v = self.cache_labels.get("enable_prefix_caching")
        return None if v is None else v == "True"

    def facts(self) -> ServerFacts:
        """What the accept summary keeps of it (``server``)."""
        return ServerFacts(
            max_model_len=self.max_model_len,
            block_size=self.block_size,
            num_blocks=self.num_blocks,
            kv_capacity_tokens=self.kv_capacity_tokens,
            prefix_caching=self.prefix_caching,
            kv_offloading_size=self.kv_offloading_size,
        )


async def _get_text(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> str | None:
    try:
        async with http.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            return (await resp.read()).decode(errors="replace") if resp.status == 200 else None
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        return None


def _int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v not in (None, "", "None") else None
    except ValueError:
        return None


def offload_counters(metrics_text: str) -> dict[str, float]:
    """Sum of every non-histogram sample whose metric name mentions ``offload``."""
    lines = [ln for ln in metrics_text.splitlines() if OFFLOAD_WORD in ln.split("{")[0] and ln[:1] != "#"]
    out: dict[str, float] = {}
    for family in text_string_to_metric_families("\n".join(lines) + "\n"):
        for s in family.samples:
            if s.name.endswith(("_bucket", "_created", "_sum", "_count")):
                continue
            out[s.name] = out.get(s.name, 0.0) + float(s.value)
    return out


async def snapshot(http: aiohttp.ClientSession, metrics_url: str) -> Snapshot:
    text = await _get_text(http, metrics_url, {})
    if text is None:
        return Snapshot(error=f"cannot read {metrics_url}")
    return Snapshot(parse_metrics(text), offload_counters(text))


async def server_info(
    http: aiohttp.ClientSession, url: str, metrics_url: str, headers: dict[str, str]
) -> ServerInfo:
    info = ServerInfo()
    models = await _get_text(http, f"{url}/v1/models", headers)
    if models:
        with contextlib.suppress(ServerError):  # bench's discovery has said why; here only a limit is read
            data = listed_models(models.encode(errors="replace"), f"{url}/v1/models") or [{}]
            meta = data[0].get("meta")
            meta = meta if isinstance(meta, dict) else {}
            # vLLM's max_model_len; llama.cpp's context of one slot (its meta.n_ctx)
            info.max_model_len = _int(str(data[0].get("max_model_len"))) or _int(str(meta.get("n_ctx")))
    text = await _get_text(http, metrics_url, {})
    if text:
        info.cache_labels = cache_info(text)
        info.block_size = _int(info.cache_labels.get("block_size"))
        info.num_blocks = _int(
            info.cache_labels.get("num_gpu_blocks") or info.cache_labels.get("num_cpu_blocks")
        )
    return info
