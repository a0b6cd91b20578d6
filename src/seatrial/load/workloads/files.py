"""The ``file`` workload: the user's JSONL, ``{"prompt": str}`` or ``{"messages": [...]}`` per line, with an
optional ``output_len``; each prompt starts with the run's nonce (no earlier run's cache hit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import ConfigError
from seatrial.load.workloads.spec import RequestSpec


def with_nonce(prompt: str | list[dict[str, str]], nonce: str) -> str | list[dict[str, str]]:
    """The prompt with ``[nonce] `` in front of its text (of a chat, in front of its first message)."""
    if not nonce:
        return prompt
    if isinstance(prompt, str):
        return f"[{nonce}] {prompt}"
    first = dict(prompt[0])
    first["content"] = f"[{nonce}] {first.get('content', '')}"
    return [first, *prompt[1:]]


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(0-based line, object) for each non-blank line of a JSONL file; a line that is not a JSON object
    raises ConfigError naming it."""
    for i, raw in enumerate(path.read_bytes().splitlines()):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{i + 1}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{i + 1}: not a JSON object")
        yield i, row


def file_specs(
    path: Path, count: int, default_output_len: int, eos: bool, nonce: str = ""
) -> list[RequestSpec]:
    if not path.is_file():
        raise ConfigError(f"--file: {path} does not exist")
    rows: list[dict[str, Any]] = []
    for i, row in json_lines(path):
        if not ({"prompt", "messages"} & row.keys()):
            raise ConfigError(f"{path}:{i + 1}: each line needs 'prompt' or 'messages'")
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path}: no prompts")
    return [
        RequestSpec(
            with_nonce(r.get("messages") or r["prompt"], nonce),
            int(r.get("output_len", default_output_len)),
            None,
            "file",
            eos,
        )
        for r in (rows[i % len(rows)] for i in range(count))
    ]
