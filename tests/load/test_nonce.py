"""Issue 16 item 10: a second run never re-sends the first one's prompts (the server's prefix cache
would serve them, and TTFT would drop for the wrong reason); a recorded seed reproduces a run exactly;
a level whose workload shares no prefix but got prefix-cache hits says so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from tests.servers import synthetic_server

from seatrial.load.config import BenchConfig, WorkloadConfig
from seatrial.load.level import level_flags
from seatrial.load.tokenize import ServerTokenizer
from seatrial.load.workloads import RequestSpec, build_specs
from seatrial.testing.server import ThreadedServer

server = synthetic_server(itl_s=0.001)


def prompts(url: str, count: int, **wl: object) -> list[RequestSpec]:
    async def go() -> list[RequestSpec]:
        async with aiohttp.ClientSession() as http:
            tok = ServerTokenizer(http, url, "synthetic", {})
            return await build_specs(WorkloadConfig.model_validate(wl), tok, count)

    return asyncio.run(go())


@pytest.mark.parametrize("name", ["random", "unique-code", "prefill", "decode", "mixed"])
def test_two_runs_send_different_prompts_and_a_seed_reproduces_one(server: ThreadedServer, name: str) -> None:
    wl = {"name": name, "input_len": 24, "output_len": 4, "long_input_len": 40}
    first, second = prompts(server.url, 8, **wl), prompts(server.url, 8, **wl)
    assert {str(s.prompt) for s in first}.isdisjoint({str(s.prompt) for s in second})
    seed = WorkloadConfig.model_validate(wl).seed
    again = [str(s.prompt) for s in prompts(server.url, 8, **wl, seed=12345)]
    assert again == [str(s.prompt) for s in prompts(server.url, 8, **wl, seed=12345)] and seed is not None


def test_unique_code_and_file_prompts_start_with_the_runs_nonce(
    server: ThreadedServer, tmp_path: Path
) -> None:
    code = prompts(server.url, 3, name="unique-code", seed=255)
    assert all(str(s.prompt).startswith("[000000ff] Write ") for s in code)
    file = tmp_path / "p.jsonl"
    file.write_text(
        json.dumps({"prompt": "hello"})
        + "\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}]})
        + "\n"
    )
    specs = prompts(server.url, 2, name="file", file=str(file), seed=255)
    assert specs[0].prompt == "[000000ff] hello"
    assert specs[1].prompt == [{"role": "user", "content": "[000000ff] hi"}]


def test_random_prompts_of_one_level_are_all_different(server: ThreadedServer) -> None:
    specs = prompts(server.url, 200, name="random", input_len=8, output_len=2, seed=1)
    assert len({s.prompt for s in specs}) == 200


def test_the_seed_is_recorded_in_the_config() -> None:
    a = BenchConfig.model_validate({"target": {"url": "http://127.0.0.1:1"}})
    b = BenchConfig.model_validate({"target": {"url": "http://127.0.0.1:1"}})
    assert a.workload.seed != b.workload.seed
    dumped = a.model_dump(mode="json")
    assert BenchConfig.model_validate(dumped).workload.seed == a.workload.seed


def test_prefix_cache_hits_on_a_workload_that_shares_no_prefix_are_flagged() -> None:
    cfg = BenchConfig.model_validate({"target": {"url": "http://127.0.0.1:1"}})
    server = {"in_flight_samples": 6, "prefix_cache_hits": 2048.0}
    notes = level_flags(server, cfg, 64)
    assert (
        len(notes) == 1
        and "2,048 prefix-cache hit tokens although this workload shares no prefix" in notes[0]
    )
    shared = cfg.model_copy(update={"workload": WorkloadConfig(name="shared-prefix")})
    assert level_flags(server, shared, 64) == []
    # one token per request is the BOS every prompt shares (llama-server counts it): no alarm
    bos = {"in_flight_samples": 6, "prefix_cache_hits": 64.0}
    assert level_flags(bos, cfg, 64) == [] and level_flags(bos, cfg, 63)
    few = level_flags({"in_flight_samples": 2}, cfg, 64)
    assert few and "only 2 /metrics scrapes while requests were in flight" in few[0]
