"""Trace formats and the prompts built from them (issue 24): public slices of Mooncake's and Azure's traces
(tests/load/data/traces, NOTICE.md there), read line by line; conversations found in Mooncake's hash ids;
token-id prompts of exact lengths whose hash-id blocks are shared exactly, new each run; the prefix hits
the shared blocks allow at an engine's block size."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
import orjson
import pytest
from tests.servers import synthetic_server

from seatrial.errors import ConfigError
from seatrial.load.config import WorkloadConfig
from seatrial.load.tokenize import ServerTokenizer
from seatrial.load.workloads import build_specs, measured_requests
from seatrial.load.workloads.replay import prefix_hits_allowed, scaled
from seatrial.load.workloads.spec import RequestSpec
from seatrial.load.workloads.traces import read_trace
from seatrial.testing.server import ThreadedServer

DATA = Path(__file__).parent / "data" / "traces"
CHAIN = DATA / "mooncake_conversation_chain.jsonl"
SYNTHETIC = DATA / "mooncake_synthetic_100.jsonl"


def _rows(path: Path) -> list[dict[str, int | list[int]]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def test_mooncake_lines_are_read_as_they_are() -> None:
    rows = _rows(SYNTHETIC)
    lines = read_trace(SYNTHETIC, "mooncake")
    assert [x.line for x in lines] == list(range(100))
    for raw, line in zip(rows, lines, strict=True):
        assert (line.timestamp_ms, line.input_len, line.output_len) == (
            raw["timestamp"], raw["input_length"], raw["output_length"]
        )
        assert list(line.hash_ids or ()) == raw["hash_ids"]


def test_a_mooncake_conversation_is_found_in_its_hash_ids() -> None:
    """23 lines of one conversation (each turn's hash ids begin with the previous turn's full blocks)."""
    lines = read_trace(CHAIN, "mooncake")
    assert [(x.session, x.turn, x.after) for x in lines] == [(0, k, k - 1 if k else None) for k in range(23)]
    # the first 100 lines of the conversation trace share only their first block: no conversation there
    assert all(x.session is None for x in read_trace(DATA / "mooncake_conversation_100.jsonl", "mooncake"))
    # replayed from its 6th turn on, the conversation starts there
    part = read_trace(CHAIN, "mooncake", start=5, limit=3)
    assert [(x.line, x.session, x.turn, x.after) for x in part] == [(5, 0, 0, None), (6, 0, 1, 0), (7, 0, 2, 1)]


def test_azure_2023_and_2024_timestamps() -> None:
    lines = read_trace(DATA / "azure_code_2023_100.csv", "azure")
    assert len(lines) == 100 and lines[0].timestamp_ms == 0.0
    assert (lines[0].input_len, lines[0].output_len) == (4808, 10)
    # 2023-11-16 18:17:03.9799600 -> 18:17:04.0319600 (seven fractional digits, CRLF)
    assert lines[1].timestamp_ms == pytest.approx(52.0) and lines[1].line == 1
    assert lines[-1].timestamp_ms == pytest.approx(192_162.141, abs=0.01)
    # 2024: a UTC offset and six fractional digits (00:00:00.001163+00:00 -> .041683, .157988, ...)
    newer = read_trace(DATA / "azure_conv_2024_head5_from_notebook.csv", "azure")
    assert [x.timestamp_ms for x in newer] == pytest.approx([0.0, 40.52, 156.825, 157.769, 247.116])
    assert [(x.input_len, x.output_len) for x in newer][-1] == (617, 104)


def test_burstgpt_columns(tmp_path: Path) -> None:
    """A file written here in BurstGPT's documented columns (Timestamp in s, Model, Request tokens, Response
    tokens, Total tokens, Log Type): BurstGPT's own data is an LFS object that could not be fetched (see
    data/traces/NOTICE.md). A response of 0 tokens (a request that failed in the trace) asks for one."""
    path = tmp_path / "burst.csv"
    path.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "5.5,GPT-4,1021,0,1021,API log\n"
        "7.25,ChatGPT,30,200,230,Conversation log\n"
    )
    lines = read_trace(path, "burstgpt")
    assert [(x.timestamp_ms, x.input_len, x.output_len) for x in lines] == [
        (5000.0, 472, 18), (5500.0, 1021, 0), (7250.0, 30, 200)
    ]
    assert scaled(0, 512) == 1 and scaled(472, 16) == 14 and scaled(10, 16) == 1


def test_jsonl_lengths_messages_and_sessions(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"timestamp_ms": 0, "input_length": 100, "output_length": 5}\n'
        '{"timestamp_ms": 10, "session": "a", "messages": [{"role": "user", "content": "hi"}]}\n'
        "\n"
        '{"timestamp_ms": 20, "session": "b", "messages": [{"role": "user", "content": "yo"}], "output_length": 3}\n'
        '{"timestamp_ms": 30, "session": "a", "messages": [{"role": "user", "content": "and?"}]}\n'
    )
    lines = read_trace(path, "jsonl")
    assert [x.line for x in lines] == [0, 1, 3, 4]  # file lines, the blank one skipped
    assert [(x.session, x.turn, x.after) for x in lines] == [(None, None, None), (0, 0, None), (1, 0, None), (0, 1, 1)]
    assert lines[1].output_len is None and lines[2].output_len == 3


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ('{"timestamp": 0, "input_length": 10}\n', "mooncake", "needs hash_ids, output_length"),
        ('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1]}\n', "mooncake", "expected 2"),
        ("not json\n", "jsonl", ":1: not JSON"),
        ('{"input_length": 1, "output_length": 1}\n', "jsonl", "needs 'timestamp_ms'"),
        ('{"timestamp_ms": -1, "input_length": 1, "output_length": 1}\n', "jsonl", "number >= 0"),
        ("when,ContextTokens\n1,2\n", "azure", "needs the columns TIMESTAMP, ContextTokens, GeneratedTokens"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", "azure", ":2: TIMESTAMP 'yesterday'"),
        # issue 42 item 12: infinities, lengths no model takes, prompts that are not text or messages
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,inf,4\n", "azure", ":2: 'ContextTokens' must be a finite"),
        ("Timestamp,Request tokens,Response tokens\n0,8,4\ninf,8,4\n", "burstgpt", ":3: 'Timestamp' must be a finite"),
        ("Timestamp,Request tokens,Response tokens\n0,8,1e12\n", "burstgpt", ":2: 'Response tokens' must be 0 to 10,000,000"),
        ('{"timestamp_ms": 0, "input_length": 1000000000000, "output_length": 1}\n', "jsonl", "'input_length' must be 1 to 10,000,000"),
        ('{"timestamp_ms": 0, "input_length": 8, "output_length": Infinity}\n', "jsonl", "not JSON"),
        ('{"timestamp_ms": 0, "prompt": [1, 2, 3], "output_length": 4}\n', "jsonl", ":1: 'prompt' must be text, got list"),
        ('{"timestamp_ms": 0, "messages": [1, null]}\n', "jsonl", ":1: 'messages' must be a list of chat messages"),
        ('{"timestamp_ms": 0, "messages": "hi"}\n', "jsonl", ":1: 'messages' must be a list of chat messages"),
    ],
)
def test_a_bad_trace_is_refused_with_its_line(tmp_path: Path, text: str, fmt: str, message: str) -> None:
    path = tmp_path / "bad"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        read_trace(path, fmt)


@pytest.mark.parametrize(("last_ms", "days"), [(1e308, "1.16e+300"), (2.52e14, "2.92e+06"), (32 * 86_400_000, "32")])
def test_a_replay_longer_than_a_month_is_refused_before_any_request(tmp_path: Path, last_ms: float, days: str) -> None:
    path = tmp_path / "t.jsonl"
    rows = [{"timestamp_ms": t, "input_length": 8, "output_length": 4} for t in (0, last_ms)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    cfg = WorkloadConfig(name="trace", trace=path, trace_format="jsonl")
    with pytest.raises(ConfigError, match=re.escape(f"would take {days} days at --speedup 1 (more than 31 days)")):
        measured_requests(cfg, 1)
    if last_ms == 32 * 86_400_000:  # 16 days at twice the speed: replayed
        assert measured_requests(cfg.model_copy(update={"speedup": 2.0}), 1) == 2


def test_a_start_past_the_end_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--trace-start 500: .* has 23 requests"):
        read_trace(CHAIN, "mooncake", start=500)
    with pytest.raises(ConfigError, match="does not exist"):
        read_trace(tmp_path / "none.jsonl", "mooncake")


server = synthetic_server()


def _specs(url: str, cfg: WorkloadConfig, salt: int = 1) -> list[RequestSpec]:
    async def build() -> list[RequestSpec]:
        async with aiohttp.ClientSession() as http:
            tok = ServerTokenizer(http, url, "synthetic", {})
            return await build_specs(cfg, tok, measured_requests(cfg, 16), salt)

    return asyncio.run(build())


def test_trace_prompts_are_token_ids_of_exact_length_with_shared_blocks_exactly(server: ThreadedServer) -> None:
    b = 16
    cfg = WorkloadConfig(name="trace", trace=SYNTHETIC, trace_format="mooncake", trace_block_tokens=b,
                         speedup=2.0, seed=7)  # fmt: skip
    specs = _specs(server.url, cfg)
    rows = _rows(SYNTHETIC)
    assert len(specs) == 100 and [s.trace_line for s in specs] == list(range(100))
    for raw, spec in zip(rows, specs, strict=True):
        n = max(1, int(raw["input_length"]) * b // 512)  # type: ignore[call-overload]
        assert isinstance(spec.prompt, list) and len(spec.prompt) == n == spec.expected_prompt_tokens
        assert spec.output_len == max(1, int(raw["output_length"]) * b // 512)  # type: ignore[call-overload]
        assert spec.at_s == pytest.approx(int(raw["timestamp"]) / 1000 / 2)  # type: ignore[call-overload]
    # lines 42 and 49 share their first 57 hash ids: exactly 57 blocks of 16 tokens, then they differ
    a, c = specs[42].prompt, specs[49].prompt
    assert a[: 57 * b] == c[: 57 * b] and a[57 * b : 58 * b] != c[57 * b : 58 * b]
    # the same line in another run (another seed): other blocks, so no cache hit from the run before
    again = _specs(server.url, cfg.model_copy(update={"seed": 8}))
    assert again[42].prompt[:b] != a[:b]
    assert _specs(server.url, cfg)[42].prompt == a  # and the same seed reproduces it
    assert _specs(server.url, cfg, salt=2)[42].prompt[:b] != a[:b]  # a warm-up's blocks are its own


def test_the_prefix_hits_a_trace_allows_at_the_engine_block_size(server: ThreadedServer) -> None:
    """Lines 49 and 61 of Mooncake's synthetic slice share 57 and 28 blocks with an earlier line; at 16
    tokens a block that is 912 and 448 tokens, whole 128-token engine blocks of it 896 and 384; lines 58, 74
    and 90 share 5 or 6 blocks (96 tokens at most), less than one engine block. At 16-token engine blocks
    each of those three has 5 (86 tokens: line 74's sixth shared block is its last, partial one)."""
    cfg = WorkloadConfig(name="trace", trace=SYNTHETIC, trace_format="mooncake", trace_block_tokens=16, seed=3)
    specs = _specs(server.url, cfg)
    assert prefix_hits_allowed(specs, 128) == 896 + 384
    assert prefix_hits_allowed(specs, 16) == 16 * (57 + 28 + 5 + 5 + 5)


def test_prefix_hits_allowed_by_hand() -> None:
    same = list(range(8))
    specs = [RequestSpec(same, 1, at_s=0.0), RequestSpec(same, 1, at_s=1.0), RequestSpec([*same, 9], 1, at_s=2.0)]
    # the second prompt is the first again: all but its last token may hit, in whole blocks of 4: one block;
    # the third holds both blocks and one token more: two blocks
    assert prefix_hits_allowed(specs, 4) == 4 + 8
    assert prefix_hits_allowed([RequestSpec("text", 1)], 4) is None
    # a block is cached with what came before it: the same second block after another first one is no hit
    assert prefix_hits_allowed([RequestSpec([1, 2, 3, 4], 1), RequestSpec([0, 2, 3, 4, 5], 1)], 2) == 0


def test_the_nonce_leads_a_trace_conversation_s_first_turn_only(server: ThreadedServer, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"timestamp_ms": 0, "session": 1, "messages": [{"role": "user", "content": "hi"}]}\n'
        '{"timestamp_ms": 5, "session": 1, "messages": [{"role": "user", "content": "more"}], "output_length": 512}\n'
    )
    cfg = WorkloadConfig(name="trace", trace=path, trace_format="jsonl", trace_block_tokens=16, output_len=7, seed=1)
    first, second = _specs(server.url, cfg)
    assert first.prompt == [{"role": "user", "content": f"[{cfg.nonce}] hi"}] and first.output_len == 7
    assert second.prompt == [{"role": "user", "content": "more"}] and second.output_len == 16
    assert (second.session, second.turn, second.after) == (0, 1, 0)
