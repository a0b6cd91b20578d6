"""The engine's own KV capacity, in tokens per engine: its cache-info gauge (vLLM's ``vllm:cache_config_info``,
every ``CacheConfig`` field as a label; 0.32 states ``kv_cache_size_tokens``, older engines ``num_gpu_blocks``
and ``block_size``), else its start-up log line (vLLM's ``{CPU|GPU} KV cache size: N tokens, ...``,
:meth:`seatrial.server.process.ServerProcess.kv_cache_line`). Which gauge and which line each engine has:
seatrial.server.engines."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from seatrial.server.engines import ENGINES, cache_info_gauges, kv_log_lines

#: the gauge whose labels :func:`kv_from_labels` reads (vLLM's CacheConfig fields)
CACHE_INFO = ENGINES["vllm"].cache_info


@dataclass(frozen=True)
class EngineKv:
    """The engine's KV capacity and where it was read."""

    tokens: int
    source: str


def cache_info(metrics_text: str) -> dict[str, str]:
    """Labels of the engine's cache-info gauge (vLLM's: block_size, num_gpu_blocks, ...), empty when absent."""
    gauges = cache_info_gauges()
    lines = "\n".join(ln for ln in metrics_text.splitlines() if ln.startswith(gauges)) + "\n"
    for family in text_string_to_metric_families(lines):
        for sample in family.samples:
            return dict(sample.labels)
    return {}


def _int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v not in (None, "", "None") else None
    except ValueError:
        return None


def kv_from_labels(labels: dict[str, str]) -> EngineKv | None:
    """``kv_cache_size_tokens`` (vLLM's group-aware figure), else ``num_gpu_blocks`` (``num_cpu_blocks``) x
    ``block_size``; None when the gauge says neither."""
    stated = _int(labels.get("kv_cache_size_tokens"))
    if stated:
        return EngineKv(stated, f"{CACHE_INFO} kv_cache_size_tokens")
    blocks = _int(labels.get("num_gpu_blocks")) or _int(labels.get("num_cpu_blocks"))
    size = _int(labels.get("block_size"))
    if blocks and size:
        return EngineKv(blocks * size, f"{CACHE_INFO} num_gpu_blocks x block_size")
    return None


def kv_from_log_line(line: str | None) -> EngineKv | None:
    """The tokens of the engine's start-up line (vLLM's "KV cache size: N tokens, ...")."""
    match = next((m for p in kv_log_lines() if (m := p.search(line or ""))), None)
    return EngineKv(int(match.group(1).replace(",", "")), "the engine's start-up log line") if match else None
