"""Server-sent events from an OpenAI-compatible stream, parsed into token-carrying chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


class MalformedStream(Exception):
    """The stream broke the SSE / OpenAI chunk format."""


@dataclass
class Chunk:
    """What one ``data:`` event carried: text (the answer's and the reasoning's), the cumulative completion
    tokens if reported, usage. ``reasoning`` is the part of ``text`` that a chat delta marked as reasoning
    (vLLM: ``reasoning``; others: ``reasoning_content``); ``only_reasoning`` says the delta carried reasoning
    and no answer text (also a reasoning token that decoded to no text: vLLM sends ``{"reasoning": ""}``)."""

    text: str
    completion_tokens: int | None
    prompt_tokens: int | None
    finish_reason: str | None
    has_choice: bool
    response_id: str | None = None
    is_chat: bool = False
    reasoning: str = ""
    only_reasoning: bool = False
    timings: dict[str, Any] | None = None  # the engine's own timing of the request (llama.cpp: last chunk)

    @property
    def answer(self) -> str:
        """The answer's text (``text`` without the reasoning)."""
        return self.text[: len(self.text) - len(self.reasoning)]


def parse_data_line(line: bytes) -> Chunk | None:
    """Parse one SSE line. Returns None for blank lines, comments, non-data fields and ``[DONE]``."""
    line = line.strip()
    if not line or line.startswith(b":"):
        return None
    if not line.startswith(b"data:"):
        return None  # event:, id:, retry: fields carry no payload for us
    body = line[5:].strip()
    if body == b"[DONE]":
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedStream(f"malformed SSE data: {body[:80]!r}") from exc
    if not isinstance(data, dict):
        raise MalformedStream(f"SSE data is not an object: {body[:80]!r}")
    if "error" in data and not data.get("choices"):
        err = data["error"]
        raise MalformedStream(
            f"server error in stream: {err.get('message', err) if isinstance(err, dict) else err}"
        )
    return _chunk(data)


MAX_TOKENS = 1 << 31  # no request counts more tokens: a larger usage is nonsense, not a measurement


def _chunk(data: dict[str, Any]) -> Chunk:
    usage = _dict_or_none(data.get("usage"), "usage")
    choices = data.get("choices") or []
    if not isinstance(choices, list):
        raise MalformedStream(f"'choices' is not a list: {_show(choices)}")
    text, reasoning, finish, only_reasoning, is_chat = "", "", None, False, False
    if choices:
        choice = _dict_or_none(choices[0], "choices[0]")
        if choice is None:
            raise MalformedStream("choices[0] is null")
        delta = choice.get("delta")
        is_chat = isinstance(delta, dict)
        if isinstance(delta, dict):
            marked = delta.get("reasoning", delta.get("reasoning_content"))
            reasoning = _text(delta.get("reasoning") or delta.get("reasoning_content"), "reasoning")
            text = _text(delta.get("content"), "delta.content") + reasoning
            only_reasoning = isinstance(marked, str) and not delta.get("content")
        else:
            text = _text(choice.get("text"), "text")
        finish = choice.get("finish_reason")
    return Chunk(
        text=text,
        completion_tokens=_count(usage, "completion_tokens"),
        prompt_tokens=_count(usage, "prompt_tokens"),
        finish_reason=str(finish) if finish else None,
        has_choice=bool(choices),
        response_id=str(data["id"]) if data.get("id") else None,
        is_chat=is_chat,
        reasoning=reasoning,
        only_reasoning=only_reasoning,
        timings=data["timings"] if isinstance(data.get("timings"), dict) else None,
    )


def _show(value: Any) -> str:
    return repr(value)[:80]


def _dict_or_none(value: Any, name: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise MalformedStream(f"'{name}' is not an object: {_show(value)}")


def _text(value: Any, name: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise MalformedStream(f"'{name}' is not a string: {_show(value)}")


def _count(usage: dict[str, Any] | None, key: str) -> int | None:
    """A usage count: an integer from 0 to :data:`MAX_TOKENS`, or absent."""
    value = None if usage is None else usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise MalformedStream(f"usage.{key} is not a token count: {_show(value)}")
    return value


def is_done(line: bytes) -> bool:
    return line.strip() == b"data: [DONE]" or line.strip() == b"data:[DONE]"
