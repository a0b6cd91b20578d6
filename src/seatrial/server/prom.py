"""Prometheus metrics of inference engines, read with prometheus_client's parser into canonical names.

Canonical gauges: ``running``, ``waiting``, ``kv_cache_usage`` (0..1).
Canonical counters: ``prefix_cache_queries``, ``prefix_cache_hits`` (tokens), ``preemptions``,
``prompt_tokens``, ``generation_tokens``, ``kv_offload_bytes`` where the engine has it.
Values of one name are summed over label sets (engines, ranks); ``_total`` suffixes are ignored.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

GAUGES = ("running", "waiting", "kv_cache_usage")
COUNTERS = ("prefix_cache_queries", "prefix_cache_hits", "preemptions", "prompt_tokens", "generation_tokens")

# Engine metric name (without _total) -> canonical name. vLLM v1 and v0 names, SGLang, llama.cpp.
NAMES: dict[str, str] = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "kv_cache_usage",
    "vllm:gpu_cache_usage_perc": "kv_cache_usage",
    "vllm:prefix_cache_queries": "prefix_cache_queries",
    "vllm:prefix_cache_hits": "prefix_cache_hits",
    "vllm:gpu_prefix_cache_queries": "prefix_cache_queries",
    "vllm:gpu_prefix_cache_hits": "prefix_cache_hits",
    "vllm:num_preemptions": "preemptions",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
    "sglang:num_running_reqs": "running",
    "sglang:num_queue_reqs": "waiting",
    "sglang:token_usage": "kv_cache_usage",
    "sglang:cached_tokens": "prefix_cache_hits",
    "sglang:num_retracted_reqs": "preemptions",
    "sglang:prompt_tokens": "prompt_tokens",
    "sglang:generation_tokens": "generation_tokens",
    "llamacpp:requests_processing": "running",
    "llamacpp:requests_deferred": "waiting",
    "llamacpp:kv_cache_usage_ratio": "kv_cache_usage",
    "llamacpp:prompt_tokens": "prompt_tokens",
    "llamacpp:tokens_predicted": "generation_tokens",
}
# SGLang counts prefix-cache queries as prompt tokens; only used when no engine-native queries exist.
QUERY_FALLBACK = {"sglang:prompt_tokens": "prefix_cache_queries"}


_PREFIXES = tuple(NAMES) + tuple(QUERY_FALLBACK)


def relevant_lines(text: str) -> str:
    """Only the sample lines of metrics we read. vLLM's /metrics is ~50 KB of histograms; parsing it
    all takes ~17 ms, which would stall the load client's event loop and corrupt its ITL."""
    return "\n".join(line for line in text.splitlines() if line.startswith(_PREFIXES)) + "\n"


def parse_metrics(text: str) -> dict[str, float]:
    """Canonical values from one ``/metrics`` body; names the engine does not expose are absent."""
    values: dict[str, float] = {}
    fallback: dict[str, float] = {}
    for family in text_string_to_metric_families(relevant_lines(text)):
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket", "_count", "_sum")):
                continue
            base = sample.name.removesuffix("_total")
            if base in NAMES:
                key = NAMES[base]
                values[key] = values.get(key, 0.0) + float(sample.value)
            if base in QUERY_FALLBACK:
                key = QUERY_FALLBACK[base]
                fallback[key] = fallback.get(key, 0.0) + float(sample.value)
    for key, value in fallback.items():
        values.setdefault(key, value)
    return values
