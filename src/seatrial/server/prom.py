"""Prometheus metrics of inference engines, read with prometheus_client's parser into canonical names.

Canonical gauges: ``running``, ``waiting``, ``kv_cache_usage`` (0..1).
Canonical counters: ``prefix_cache_queries``, ``prefix_cache_hits`` (tokens), ``preemptions``,
``prompt_tokens``, ``generation_tokens``, ``kv_offload_bytes`` where the engine has it.
Canonical latency histograms (seconds; their ``_sum`` and ``_count`` as ``<name>_sum``, ``<name>_count``):
``ttft``, ``itl`` (between output tokens), ``tpot`` (per request), ``e2e``, ``queue``: the engine's own
view of the requests it finished, for comparison with what the client measured.
One engine name per quantity is read (the current one; a deprecated alias only when it is absent).
Across label sets (engines, ranks) counters and running/waiting are summed and usage ratios take the
maximum; ``_total`` suffixes are ignored.
"""

from __future__ import annotations

import functools
from urllib.parse import urlencode

from prometheus_client.parser import text_string_to_metric_families

from seatrial.server.engines import ENGINES, names_of, sums

GAUGES = ("running", "waiting", "kv_cache_usage")
COUNTERS = ("prefix_cache_queries", "prefix_cache_hits", "preemptions", "prompt_tokens", "generation_tokens")

# Canonical name -> engine names (without _total) of that one quantity, the current name first: the
# first name present in a scrape is the only one read (a deprecated alias exported beside it would
# count the same thing twice). Every engine's names, from its entry in seatrial.server.engines.
ALIASES: dict[str, tuple[str, ...]] = names_of("metrics", GAUGES + COUNTERS)
#: Across label sets (data-parallel engines, ranks) these take the largest value: a usage ratio of two
#: engines at 0.9 each is 0.9, not 1.8. Everything else (counters, running, waiting) is summed.
MAX_OVER_LABELS = frozenset({"kv_cache_usage"})
NAMES: dict[str, str] = {name: canonical for canonical, names in ALIASES.items() for name in names}
# Latency histograms: canonical name -> engine names, the first one present wins (aliases of one metric).
HISTOGRAMS: dict[str, tuple[str, ...]] = names_of("histograms", ("ttft", "itl", "tpot", "e2e", "queue"))
_HISTOGRAM_NAMES = {name for names in HISTOGRAMS.values() for name in names}

# Counters read as a canonical one only when no engine-native one exists (SGLang's prompt tokens).
QUERY_FALLBACK = {name: c for engine in ENGINES.values() for name, c in engine.query_fallback.items()}
# Counters an engine states as the sum of several of its own (llama.cpp's prompt tokens: processed + cached).
SUMS = sums()
_SUMMED = {name for groups in SUMS.values() for names in groups for name in names}


_PREFIXES = tuple(NAMES) + tuple(QUERY_FALLBACK) + tuple(_SUMMED) + tuple(_HISTOGRAM_NAMES)


def sample_names() -> list[str]:
    """Every sample name :func:`parse_metrics` reads (of histograms: ``_sum`` and ``_count``)."""
    plain = [*NAMES, *QUERY_FALLBACK, *sorted(_SUMMED - set(NAMES))]
    histograms = sorted(_HISTOGRAM_NAMES)
    return [
        *plain,
        *(f"{n}_total" for n in plain),
        *(f"{n}_{s}" for n in histograms for s in ("sum", "count")),
    ]


@functools.cache  # the scraper asks every second for the same URL
def filtered_url(url: str) -> str:
    """``url`` asking the server to render only the samples seatrial reads: prometheus_client's
    ``name[]`` filter. vLLM renders ``/metrics`` on the event loop that streams the tokens, all of it
    (every histogram bucket) at each scrape. It serves ``/metrics`` twice: an instrumentator route
    that renders everything and ignores the filter, and prometheus_client's own app, mounted for
    ``/metrics/``, which honours it; so a URL ending in ``/metrics`` gets the slash."""
    base, _, query = url.partition("?")
    if base.endswith("/metrics"):
        base += "/"
    names = urlencode([("name[]", n) for n in sample_names()])
    return f"{base}?{query + '&' if query else ''}{names}"


def relevant_lines(text: str) -> str:
    """Only the sample lines of metrics we read (of histograms: sum and count, no buckets). vLLM's
    /metrics is ~50 KB of histograms; parsing it all takes ~17 ms, which would stall the load client's
    event loop and corrupt its ITL."""
    keep = (line for line in text.splitlines() if line.startswith(_PREFIXES) and "_bucket" not in line)
    return "\n".join(keep) + "\n"


def parse_metrics(text: str) -> dict[str, float]:
    """Canonical values from one ``/metrics`` body; names the engine does not expose are absent."""
    by_name: dict[str, list[float]] = {}
    histograms: dict[str, float] = {}
    for family in text_string_to_metric_families(relevant_lines(text)):
        for sample in family.samples:
            if sample.name.removesuffix("_count").removesuffix("_sum") in _HISTOGRAM_NAMES:
                histograms[sample.name] = histograms.get(sample.name, 0.0) + float(sample.value)
            if sample.name.endswith(("_created", "_bucket", "_count", "_sum")):
                continue
            base = sample.name.removesuffix("_total")
            if base in NAMES or base in QUERY_FALLBACK or base in _SUMMED:
                by_name.setdefault(base, []).append(float(sample.value))
    values: dict[str, float] = {}
    for canonical, names in ALIASES.items():
        found = next((n for n in names if n in by_name), None)
        if found is not None:
            series = by_name[found]
            values[canonical] = max(series) if canonical in MAX_OVER_LABELS else sum(series)
    for canonical, groups in SUMS.items():
        group = next((g for g in groups if all(n in by_name for n in g)), None)
        if canonical not in values and group is not None:
            values[canonical] = sum(sum(by_name[n]) for n in group)
    for name, canonical in QUERY_FALLBACK.items():
        if canonical not in values and name in by_name:
            values[canonical] = sum(by_name[name])
    for canonical, names in HISTOGRAMS.items():
        found = next((n for n in names if f"{n}_count" in histograms and f"{n}_sum" in histograms), None)
        if found is not None:
            values[f"{canonical}_sum"] = histograms[f"{found}_sum"]
            values[f"{canonical}_count"] = histograms[f"{found}_count"]
    return values

