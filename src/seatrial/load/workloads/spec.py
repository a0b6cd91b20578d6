"""One request to send, as the workloads build it and the client sends it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

Messages = list[dict[str, str]]
Prompt = str | Messages | list[int]


def is_messages(prompt: Any) -> TypeGuard[Messages]:
    """A chat's messages (not text, not token ids)."""
    return isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict)


@dataclass
class RequestSpec:
    """One request to send. ``prompt`` is text, messages (chat) or token ids (completions: sent as they are,
    never re-tokenized).

    A timed workload (a trace, sessions) also says when: ``at_s`` from the level's start, and ``after``,
    the level-wide index of the request whose answer this one waits for (a conversation's previous turn:
    it is sent once that answer arrived and the plan's think time passed, and not before ``at_s``).
    ``trace_line``, ``session`` and ``turn`` go into the request's record."""

    prompt: Prompt
    output_len: int
    expected_prompt_tokens: int | None = None
    kind: str = "default"
    ignore_eos: bool = True
    at_s: float | None = None
    after: int | None = None
    trace_line: int | None = None
    session: int | None = None
    turn: int | None = None
