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


def _chunk(data: dict[str, Any]) -> Chunk:
    usage = data.get("usage") or {}
    choices = data.get("choices") or []
    text, reasoning, finish, only_reasoning = "", "", None, False
    if choices:
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            marked = delta.get("reasoning", delta.get("reasoning_content"))
            reasoning = delta.get("reasoning") or delta.get("reasoning_content") or ""
            text = (delta.get("content") or "") + reasoning
            only_reasoning = isinstance(marked, str) and not delta.get("content")
        else:
            text = choice.get("text") or ""
        finish = choice.get("finish_reason")
    return Chunk(
        text=text,
        completion_tokens=usage.get("completion_tokens"),
        prompt_tokens=usage.get("prompt_tokens"),
        finish_reason=finish,
        has_choice=bool(choices),
        response_id=data.get("id"),
        is_chat=bool(choices) and isinstance(choices[0].get("delta"), dict),
        reasoning=reasoning,
        only_reasoning=only_reasoning,
        timings=data["timings"] if isinstance(data.get("timings"), dict) else None,
    )


def is_done(line: bytes) -> bool:
    return line.strip() == b"data: [DONE]" or line.strip() == b"data:[DONE]"
