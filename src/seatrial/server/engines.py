"""What seatrial knows of each inference engine, in one place: its ``/metrics`` names for each canonical
quantity (seatrial.server.prom), the gauge whose labels state its KV cache layout (seatrial.server.capacity),
and the start-up log line that states its KV capacity in tokens (ServerProcess.kv_cache_line).

A new engine is one :data:`ENGINES` entry. Within an engine a quantity's names are listed current first,
deprecated aliases after (the first one present in a scrape is the only one read); across engines the
entries' order is the order their names are tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Engine:
    """One engine's names. ``metrics``: canonical gauge or counter -> its names (without ``_total``);
    ``histograms``: canonical latency histogram (seconds) -> its names; ``query_fallback``: a counter read as
    a canonical one only when no engine-native one is present; ``sums``: a canonical counter that is the sum of
    several of the engine's (read only when all of them are present); ``cache_info``: the gauge whose labels state
    the KV cache (block size, blocks, tokens); ``kv_log_line``: the start-up log line with the KV capacity in
    tokens as its first group. None: the engine states no such thing."""

    metrics: dict[str, tuple[str, ...]]
    histograms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    query_fallback: dict[str, str] = field(default_factory=dict)
    sums: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cache_info: str | None = None
    kv_log_line: re.Pattern[str] | None = None


#: llama.cpp's prompt tokens: those it processed and those it reused from its cache
LLAMACPP_PROMPT = ("llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached")

ENGINES: dict[str, Engine] = {
    # v1 names, then v0 (and early v1) aliases
    "vllm": Engine(
        metrics={
            "running": ("vllm:num_requests_running",),
            "waiting": ("vllm:num_requests_waiting",),
            "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
            "prefix_cache_queries": ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"),
            "prefix_cache_hits": ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"),
            "preemptions": ("vllm:num_preemptions",),
            "prompt_tokens": ("vllm:prompt_tokens",),
            "generation_tokens": ("vllm:generation_tokens",),
        },
        histograms={
            "ttft": ("vllm:time_to_first_token_seconds",),
            "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
            "tpot": ("vllm:request_time_per_output_token_seconds",),
            "e2e": ("vllm:e2e_request_latency_seconds",),
            "queue": ("vllm:request_queue_time_seconds",),
        },
        cache_info="vllm:cache_config_info",
        kv_log_line=re.compile(r"KV cache size: ([\d,]+) tokens"),  # "{CPU|GPU} KV cache size: N tokens, ..."
    ),
    "sglang": Engine(
        metrics={
            "running": ("sglang:num_running_reqs",),
            "waiting": ("sglang:num_queue_reqs",),
            "kv_cache_usage": ("sglang:token_usage",),
            "prefix_cache_hits": ("sglang:cached_tokens",),
            "preemptions": ("sglang:num_retracted_reqs",),
            "prompt_tokens": ("sglang:prompt_tokens",),
            "generation_tokens": ("sglang:generation_tokens",),
        },
        histograms={
            "ttft": ("sglang:time_to_first_token_seconds",),
            "itl": ("sglang:inter_token_latency_seconds",),
            "e2e": ("sglang:e2e_request_latency_seconds",),
            "queue": ("sglang:queue_time_seconds",),
        },
        # SGLang counts prefix-cache queries as prompt tokens
        query_fallback={"sglang:prompt_tokens": "prefix_cache_queries"},
    ),
    # llama-server --metrics (llama.cpp as vendored in llama-cpp-python 0.3.36, scraped in
    # tests/server/data/llamacpp_metrics.txt): gauges of slots processing and requests deferred (waiting for a
    # slot), counters of prompt tokens processed and reused from its cache, of tokens generated. It has no
    # KV usage gauge (kv_cache_usage_ratio is an older build's, read where present), no preemptions and no
    # latency histograms: those are UNAVAILABLE from it, never zero.
    "llamacpp": Engine(
        metrics={
            "running": ("llamacpp:requests_processing",),
            "waiting": ("llamacpp:requests_deferred",),
            "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",),
            "prefix_cache_hits": ("llamacpp:prompt_tokens_cached",),
            "generation_tokens": ("llamacpp:tokens_predicted",),
        },
        # its prompt_tokens counts the tokens it processed, without those reused from its cache: the prompt
        # tokens of its requests (and the tokens a prefix cache was asked for) are the two together
        sums={"prompt_tokens": LLAMACPP_PROMPT, "prefix_cache_queries": LLAMACPP_PROMPT},
    ),
}


def names_of(kind: str, canonical: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Canonical name -> every engine's names for it, engine by engine (``kind``: metrics or histograms)."""
    return {
        c: tuple(n for engine in ENGINES.values() for n in getattr(engine, kind).get(c, ())) for c in canonical
    }


def cache_info_gauges() -> tuple[str, ...]:
    return tuple(e.cache_info for e in ENGINES.values() if e.cache_info)


def kv_log_lines() -> tuple[re.Pattern[str], ...]:
    return tuple(e.kv_log_line for e in ENGINES.values() if e.kv_log_line is not None)


def sums() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Canonical counter -> each engine's names whose sum it is (``Engine.sums``)."""
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for engine in ENGINES.values():
        for canonical, names in engine.sums.items():
            out[canonical] = (*out.get(canonical, ()), names)
    return out
