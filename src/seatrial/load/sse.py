"""Server-sent events from an OpenAI-compatible stream, parsed into token-carrying chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


class MalformedStream(Exception):
    """The stream broke the SSE / OpenAI chunk format."""


@dataclass
class Chunk:
    """What one ``data:`` event carried: text, the cumulative completion tokens if reported, usage."""

    text: str
    completion_tokens: int | None
    prompt_tokens: int | None
    finish_reason: str | None
    has_choice: bool
    response_id: str | None = None
    is_chat: bool = False


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
    text, finish = "", None
    if choices:
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            text = (delta.get("content") or "") + (
                delta.get("reasoning_content") or delta.get("reasoning") or ""
            )
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
    )


def is_done(line: bytes) -> bool:
    return line.strip() == b"data: [DONE]" or line.strip() == b"data:[DONE]"
