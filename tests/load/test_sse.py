from __future__ import annotations

import pytest

from seatrial.load.client import _Timing
from seatrial.load.records import RequestRecord
from seatrial.load.sse import MalformedStream, is_done, parse_data_line


def test_parse_completion_and_chat_chunks() -> None:
    c = parse_data_line(
        b'data: {"id":"cmpl-x","choices":[{"text":"hi","finish_reason":null}],'
        b'"usage":{"prompt_tokens":7,"completion_tokens":3}}'
    )
    assert c is not None and (c.text, c.completion_tokens, c.prompt_tokens, c.response_id) == (
        "hi",
        3,
        7,
        "cmpl-x",
    )
    chat = parse_data_line(b'data: {"choices":[{"delta":{"content":"a","reasoning_content":"b"}}]}')
    assert chat is not None and chat.text == "ab" and chat.completion_tokens is None


@pytest.mark.parametrize("line", [b"", b": ping", b"event: x", b"data: [DONE]"])
def test_non_payload_lines_are_skipped(line: bytes) -> None:
    assert parse_data_line(line) is None


def test_malformed_and_error_payloads_raise() -> None:
    with pytest.raises(MalformedStream, match="malformed"):
        parse_data_line(b"data: {oops")
    with pytest.raises(MalformedStream, match="boom"):
        parse_data_line(b'data: {"error":{"message":"boom"}}')
    assert is_done(b"data: [DONE]\n")


def test_itl_divides_a_chunk_gap_by_the_tokens_it_carried() -> None:
    rec = RequestRecord("r", "measure", 1)
    t = _Timing(rec, t0=0)
    mk = lambda n, choice=True: parse_data_line(  # noqa: E731
        b'data: {"choices":'
        + (b'[{"text":""}]' if choice else b"[]")
        + b',"usage":{"completion_tokens":%d}}' % n
    )
    t.on_chunk(mk(1), now=10_000_000)  # first token at 10 ms
    t.on_chunk(mk(2), now=14_000_000)  # +4 ms, 1 token
    t.on_chunk(mk(5), now=20_000_000)  # +6 ms, 3 tokens -> 2 ms each
    t.on_chunk(mk(5, choice=False), now=21_000_000)  # usage-only chunk: no token
    t.finish(end_ns=22_000_000)
    assert rec.ttft_ms == 10.0 and rec.itl_ms == [4.0, 2.0, 2.0, 2.0]
    assert rec.output_tokens == 5 and rec.last_token_ms == 20.0 and rec.e2e_ms == 22.0
    assert rec.tpot_ms == pytest.approx(2.5)


def test_without_usage_every_completion_chunk_is_a_token_but_a_chat_role_chunk_is_not() -> None:
    rec = RequestRecord("r", "measure", 1)
    t = _Timing(rec, t0=0)
    t.on_chunk(
        parse_data_line(b'data: {"choices":[{"text":""}]}'), now=5_000_000
    )  # partial UTF-8: still a token (vLLM sends one chunk per token)
    t.on_chunk(parse_data_line(b'data: {"choices":[{"text":"ab"}]}'), now=7_000_000)
    t.finish(end_ns=8_000_000)
    assert (rec.ttft_ms, rec.output_tokens, rec.itl_ms) == (5.0, 2, [2.0])
    chat = RequestRecord("c", "measure", 1)
    t = _Timing(chat, t0=0)
    t.on_chunk(
        parse_data_line(b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}'), now=1_000_000
    )
    t.on_chunk(parse_data_line(b'data: {"choices":[{"delta":{"content":"hi"}}]}'), now=4_000_000)
    t.finish(end_ns=5_000_000)
    assert (chat.ttft_ms, chat.output_tokens) == (4.0, 1)


def test_a_whole_output_merged_into_the_last_empty_chunk_is_its_tokens() -> None:
    """A starved API server can put a short output's every token, which decoded to no text, into the last
    chunk (empty text, finish_reason, no usage of its own); the server's total says how many it carried:
    they arrived with it (one chunk of 4 tokens: TTFT there, no ITL), not 'no output token'."""
    rec = RequestRecord("r", "measure", 1)
    t = _Timing(rec, t0=0)
    t.on_chunk(parse_data_line(b'data: {"choices":[{"text":"","finish_reason":"length"}]}'), now=7_000_000)
    t.on_chunk(parse_data_line(b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}'), now=7_100_000)
    t.finish(end_ns=8_000_000)
    assert (rec.ttft_ms, rec.output_tokens, rec.chunks, rec.itl_ms, rec.answer_tokens) == (7.0, 4, 1, [], 4)
