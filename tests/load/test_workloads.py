"""Workloads against the synthetic server's exact word tokenizer, and rate mode end to end."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from tests.servers import synthetic_server

from seatrial.errors import ConfigError
from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig, WorkloadConfig
from seatrial.load.tokenize import ServerTokenizer
from seatrial.load.workloads import LANGUAGES, TASKS, RequestSpec, build_specs
from seatrial.runs.folder import RunFolder, read_jsonl
from seatrial.testing.server import ThreadedServer


def specs_for(url: str, count: int, **wl: object) -> list[RequestSpec]:
    async def go() -> list[RequestSpec]:
        async with aiohttp.ClientSession() as http:
            tok = ServerTokenizer(http, url, "synthetic", {})
            return await build_specs(WorkloadConfig.model_validate(wl), tok, count)

    return asyncio.run(go())


server = synthetic_server(itl_s=0.001)


def words(spec: RequestSpec) -> int:
    assert isinstance(spec.prompt, str)
    return len(spec.prompt.split())


def test_random_prefill_decode_have_exact_lengths(server: ThreadedServer) -> None:
    rnd = specs_for(server.url, 5, name="random", input_len=37, output_len=9)
    assert [words(s) for s in rnd] == [37] * 5 and {s.output_len for s in rnd} == {9}
    assert len({s.prompt for s in rnd}) == 5  # distinct prompts
    pre = specs_for(server.url, 3, name="prefill", input_len=50)
    assert [(words(s), s.output_len, s.kind) for s in pre] == [(50, 1, "prefill")] * 3
    dec = specs_for(server.url, 2, name="decode", input_len=4, output_len=99)
    assert [(words(s), s.output_len) for s in dec] == [(4, 99)] * 2


def test_shared_prefix_repeats_k_prefixes(server: ThreadedServer) -> None:
    specs = specs_for(server.url, 8, name="shared-prefix", num_prefixes=2, prefix_len=20, input_len=5)
    assert all(s.expected_prompt_tokens == 25 == words(s) for s in specs)
    prefixes = {" ".join(str(s.prompt).split()[:20]) for s in specs}
    assert len(prefixes) == 2 and {s.kind for s in specs} == {"prefix0", "prefix1"}


def test_shared_prefixes_and_their_questions_are_all_different(server: ThreadedServer) -> None:
    # 32 prefixes cut at random starts of a ~110-token pool coincide in ~99% of runs; distinct starts never
    specs = specs_for(server.url, 64, name="shared-prefix", num_prefixes=32, prefix_len=20, input_len=5)
    prompts = [str(s.prompt).split() for s in specs]
    assert len({" ".join(p[:20]) for p in prompts}) == 32
    assert len({" ".join(p[20:]) for p in prompts}) == 64


def test_mixed_share_of_long_requests(server: ThreadedServer) -> None:
    specs = specs_for(
        server.url, 10, name="mixed", long_share=0.3, long_input_len=40, input_len=4, output_len=7
    )
    longs = [s for s in specs if s.kind == "long"]
    assert len(longs) == 3 and all(words(s) == 40 and s.output_len == 1 for s in longs)
    assert all(words(s) == 4 and s.output_len == 7 for s in specs if s.kind == "short")


def test_unique_code_prompts_are_all_distinct() -> None:
    from seatrial.load.workloads import unique_code_specs

    specs = unique_code_specs(len(TASKS) * len(LANGUAGES) + 5, 300, eos=False)
    assert len({str(s.prompt) for s in specs}) == len(specs) == 125
    assert "Python" in str(specs[0].prompt) and not specs[0].ignore_eos


def test_file_workload_and_its_errors(tmp_path: Path) -> None:
    from seatrial.load.workloads import file_specs

    f = tmp_path / "p.jsonl"
    f.write_text(
        '{"prompt": "a b c", "output_len": 5}\n\n{"messages": [{"role": "user", "content": "hi"}]}\n'
    )
    specs = file_specs(f, 3, 11, eos=False)
    assert [s.output_len for s in specs] == [5, 11, 5] and isinstance(specs[1].prompt, list)
    f.write_text('{"prompt": "ok"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"p.jsonl:2: not JSON"):
        file_specs(f, 1, 1, eos=False)
    with pytest.raises(ConfigError, match="does not exist"):
        file_specs(tmp_path / "missing.jsonl", 1, 1, eos=False)


def test_rate_mode_delivers_constant_arrivals(server: ThreadedServer, tmp_path: Path) -> None:
    cfg = BenchConfig.model_validate(
        {
            "target": {"url": server.url},
            "workload": {"name": "random", "input_len": 4, "output_len": 4},
            "load": {"rate": 40.0, "arrival": "constant", "requests": 20, "warmup": 0, "max_concurrency": 8},
        }
    )
    with RunFolder(tmp_path, "bench", cfg.model_dump(mode="json")) as folder:
        summary = asyncio.run(run_bench(cfg, folder)).to_json()
    level = summary["levels"][0]
    assert level["rate"] == 40.0 and level["valid"] and level["requests_ok"] == 20
    sent = np.sort([r["sent_ms"] for r in read_jsonl(tmp_path / "requests.jsonl")])
    assert np.median(np.diff(sent)) == pytest.approx(25.0, abs=5.0)


def test_api_key_is_sent_but_never_written(
    server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEATRIAL_TEST_KEY", "sk-very-secret-123")
    cfg = BenchConfig.model_validate(
        {
            "target": {"url": server.url, "api_key_env": "SEATRIAL_TEST_KEY"},
            "workload": {"name": "random", "input_len": 4, "output_len": 2},
            "load": {"concurrency": [1], "requests": 2, "warmup": 0},
        }
    )
    with RunFolder(tmp_path, "bench", cfg.model_dump(mode="json")) as folder:
        asyncio.run(run_bench(cfg, folder))
    for name in os.listdir(tmp_path):
        assert "sk-very-secret-123" not in (tmp_path / name).read_text()
    assert (
        json.loads((tmp_path / "run.json").read_text())["config"]["target"]["api_key_env"]
        == "SEATRIAL_TEST_KEY"
    )
