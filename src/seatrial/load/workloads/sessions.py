"""The ``sessions`` workload: ``--sessions`` conversations of ``--turns`` turns on the chat endpoint.

Each turn is a new user message of exactly ``input_len`` tokens (the server's count, as the random
workload's prompts); turn k is sent with the whole conversation so far in front of it (the earlier
messages and the answers the server gave, load.conversation), once turn k-1's answer has arrived and the
think time has passed. Every conversation starts at the level's start.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from seatrial.load.tokenize import TokenCounter
from seatrial.load.workloads.spec import RequestSpec
from seatrial.load.workloads.synthetic import random_specs

if TYPE_CHECKING:
    from seatrial.load.config import WorkloadConfig


def session_count(cfg: WorkloadConfig) -> int:
    return cfg.sessions * cfg.turns


async def session_specs(
    cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random
) -> list[RequestSpec]:
    """``count`` turns: conversations of ``cfg.turns`` turns (the last one shorter where ``count`` asks)."""
    messages = await random_specs(tok, rng, count, cfg.input_len, cfg.output_len, "turn", cfg.ignore_eos)
    specs = []
    for i, msg in enumerate(messages):
        session, turn = divmod(i, cfg.turns)
        prompt = [{"role": "user", "content": str(msg.prompt)}]
        spec = RequestSpec(prompt, cfg.output_len, None, f"turn{turn}", cfg.ignore_eos, at_s=0.0)
        spec.after, spec.session, spec.turn = (i - 1 if turn else None), session, turn
        specs.append(spec)
    return specs
