"""Reasoning-aware timing (issue 24): a chat stream whose first tokens are reasoning is timed twice, to the
first token of any kind (TTFT) and to the first answer token (``ttfa_ms``), with its reasoning and answer
tokens counted; a stream without reasoning has TTFA = TTFT. Against the synthetic server, which sends
reasoning deltas as vLLM 0.32 does (``delta.reasoning``) or as others do (``reasoning_content``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.clirun import invoke

from seatrial.load.client import Endpoint, _Timing, new_http, send
from seatrial.load.records import RequestRecord
from seatrial.load.sse import parse_data_line
from seatrial.load.workloads import RequestSpec
from seatrial.testing.server import SyntheticConfig, ThreadedServer

OUTPUT, THINK = 10, 4


def _send(cfg: SyntheticConfig, kind: str, continuous_usage: bool = False) -> tuple[RequestRecord, str]:
    async def run(url: str) -> tuple[RequestRecord, str]:
        ep = Endpoint(url, "synthetic", kind, {}, continuous_usage)
        rec, answer = RequestRecord("r0", "measure", 1), []
        async with new_http(30, 10) as http:
            await send(http, ep, RequestSpec(prompt="w1 w2 w3", output_len=OUTPUT), rec, answer)
        return rec, "".join(answer)

    with ThreadedServer(cfg) as srv:
        return asyncio.run(run(srv.url))


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_a_reasoning_stream_is_timed_to_its_first_token_and_to_its_first_answer_token(field: str) -> None:
    itl = 0.02
    cfg = SyntheticConfig(itl_s=itl, ttft_s=0.005, reasoning_tokens=THINK, reasoning_field=field)
    rec, answer = _send(cfg, "chat")
    assert rec.ok and rec.output_tokens == OUTPUT
    assert (rec.reasoning_tokens, rec.answer_tokens) == (THINK, OUTPUT - THINK)
    assert rec.ttft_ms is not None and rec.ttfa_ms is not None
    # the answer's first token is the 5th: 4 server gaps of 20 ms after the first token (within the ITLs)
    assert rec.ttfa_ms - rec.ttft_ms == pytest.approx(sum(rec.itl_ms[:THINK]))
    assert rec.ttfa_ms - rec.ttft_ms >= THINK * itl * 1000 * 0.8
    # only the answer's text is collected (a conversation's next turn), not the reasoning
    assert answer.split() == [f"w{i}" for i in range(THINK + 1, OUTPUT + 1)]


def test_a_chunk_that_carries_reasoning_and_answer_counts_as_answer_and_times_the_answer() -> None:
    """3 tokens per chunk, 4 of reasoning: the second chunk carries token 4 (reasoning) and 5-6 (answer)."""
    cfg = SyntheticConfig(itl_s=0.004, ttft_s=0.005, reasoning_tokens=THINK, tokens_per_chunk=3)
    rec, _ = _send(cfg, "chat", continuous_usage=True)
    assert rec.ok and rec.chunks == 4 and rec.output_tokens == OUTPUT
    assert rec.reasoning_tokens == 3 and rec.answer_tokens == OUTPUT - 3
    assert rec.ttfa_ms is not None and rec.ttft_ms is not None and rec.ttfa_ms > rec.ttft_ms


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_without_reasoning_ttfa_is_ttft_and_every_token_is_answer(kind: str) -> None:
    rec, answer = _send(SyntheticConfig(itl_s=0.004, ttft_s=0.005), kind)
    assert rec.ok and rec.ttfa_ms == rec.ttft_ms is not None
    assert (rec.reasoning_tokens, rec.answer_tokens) == (0, OUTPUT)
    assert len(answer.split()) == OUTPUT


def test_a_stream_of_reasoning_only_has_no_ttfa() -> None:
    rec = RequestRecord("x", "measure", 1)
    timing = _Timing(rec, 0)
    for k, now in enumerate((5_000_000, 7_000_000)):
        timing.on_chunk(parse_data_line(b'data: {"choices":[{"delta":{"reasoning":"r%d"}}]}' % k), now)
    timing.finish(8_000_000)
    assert rec.ttft_ms == 5.0 and rec.ttfa_ms is None
    assert (rec.output_tokens, rec.reasoning_tokens, rec.answer_tokens) == (2, 2, 0)


def test_bench_reports_ttfa_and_the_reasoning_and_answer_tokens_of_a_level(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.004, ttft_s=0.005, reasoning_tokens=THINK)) as srv:
        args = ["bench", "--url", srv.url, "--endpoint", "chat", "--input-len", "8", "--output-len", str(OUTPUT),
                "--concurrency", "2", "--requests", "6", "--warmup", "0", "--max-lag-ms", "500",
                "--json", str(tmp_path / "s.json"), "--out", str(tmp_path / "run")]  # fmt: skip
        result = invoke(args)
    assert result.code == 0, result.output
    level = json.loads((tmp_path / "s.json").read_text())["levels"][0]
    assert level["reasoning_tokens"] == 6 * THINK and level["answer_tokens"] == 6 * (OUTPUT - THINK)
    assert level["ttfa_ms"]["p50"] > level["ttft_ms"]["p50"] > 0
    rows = [json.loads(x) for x in (tmp_path / "run" / "requests.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["phase"] == "measure"]
    assert len(rows) == 6 and all(r["ttfa_ms"] > r["ttft_ms"] and r["reasoning_tokens"] == THINK for r in rows)


def test_a_reasoning_token_without_text_is_still_reasoning() -> None:
    """vLLM (--reasoning-parser) sends ``{"reasoning": ""}`` for a reasoning token that decoded to no text
    yet, one chunk per token, and the token that ends the reasoning as ``{"content": ""}``."""
    rec = RequestRecord("x", "measure", 1)
    timing = _Timing(rec, 0)
    deltas = [b'{"role":"assistant","content":""}', b'{"reasoning":"a"}', b'{"reasoning":""}', b'{"content":""}',
              b'{"content":"b"}']  # fmt: skip
    for k, delta in enumerate(deltas):
        timing.on_chunk(parse_data_line(b'data: {"choices":[{"delta":%s}]}' % delta), (k + 1) * 1_000_000)
    timing.on_chunk(parse_data_line(b'data: {"choices":[{"delta":{"reasoning":""},"finish_reason":"length"}]}'), 9_000_000)
    timing.on_chunk(parse_data_line(b'data: {"choices":[],"usage":{"completion_tokens":3}}'), 9_500_000)
    timing.finish(10_000_000)
    # the role chunk carries none; the two reasoning chunks are the first tokens; the empty content chunk
    # carries no token without usage in every chunk, the next one is the first answer token
    assert (rec.ttft_ms, rec.ttfa_ms, rec.reasoning_tokens, rec.answer_tokens) == (2.0, 5.0, 2, 1)
