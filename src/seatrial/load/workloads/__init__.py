"""Workloads: the prompts of a level, built before the clock starts. One place to add one: :data:`WORKLOADS`
(its name, how its prompts are built, whether it asks for a fixed output length by default, and whether
its prompts share prefixes on purpose). docs/extending.md says how.

random        exactly ``input_len`` prompt tokens (server's count), fixed output with ignore_eos
unique-code   distinct code-writing prompts: 20 tasks x 6 languages (seed 002), then numbered variants
shared-prefix ``num_prefixes`` prefixes of ``prefix_len`` tokens, each followed by distinct questions
prefill       long input, 1 output token
decode        short input, long output
mixed         ``long_share`` of long-prefill requests (kind "long") among decode streams (kind "short")
file          the user's JSONL: {"prompt": str} or {"messages": [...]}, optional "output_len"
trace         a recorded trace replayed at its times (mooncake, azure, burstgpt, jsonl; load.workloads.replay)
sessions      conversations of turns, each after the previous answer (chat; load.workloads.sessions)
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from seatrial.load.tokenize import TokenCounter
from seatrial.load.workloads.files import file_specs, with_nonce
from seatrial.load.workloads.replay import trace_lines, trace_specs
from seatrial.load.workloads.sessions import session_count, session_specs
from seatrial.load.workloads.spec import RequestSpec
from seatrial.load.workloads.synthetic import (
    LANGUAGES,
    TASKS,
    random_specs,
    shared_prefix_specs,
    unique_code_specs,
)

if TYPE_CHECKING:
    from seatrial.load.config import WorkloadConfig

Build = Callable[["WorkloadConfig", TokenCounter, int, random.Random], Awaitable[list[RequestSpec]]]


@dataclass(frozen=True)
class Workload:
    """A workload: how ``count`` requests are built (``build(cfg, tokenizer, count, rng)``), whether it asks
    for exactly ``output_len`` tokens unless told otherwise (``ignore_eos``), and whether its prompts share
    prefixes on purpose (then prefix-cache hits are expected, not a sign of repeated prompts). A ``timed``
    one sends its requests at its own times (a trace's, conversations' turns) in one level, of ``count(cfg)``
    measured requests; ``endpoint`` is the one it needs, if any."""

    name: str
    build: Build
    ignore_eos: bool
    shares_prefix: bool = False
    timed: bool = False
    count: Callable[[WorkloadConfig], int] | None = None
    endpoint: Literal["completions", "chat"] | None = None


async def _random(cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random) -> list[RequestSpec]:
    return await random_specs(tok, rng, count, cfg.input_len, cfg.output_len, "default", cfg.ignore_eos)


async def _prefill(cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random) -> list[RequestSpec]:
    return await random_specs(tok, rng, count, cfg.input_len, 1, "prefill", cfg.ignore_eos)


async def _decode(cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random) -> list[RequestSpec]:
    return await random_specs(tok, rng, count, cfg.input_len, cfg.output_len, "decode", cfg.ignore_eos)


async def _unique_code(
    cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random
) -> list[RequestSpec]:
    return unique_code_specs(count, cfg.output_len, cfg.ignore_eos, cfg.nonce)


async def _mixed(cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random) -> list[RequestSpec]:
    eos, n_long = cfg.ignore_eos, round(count * cfg.long_share)
    longs = await random_specs(tok, rng, n_long, cfg.long_input_len, cfg.long_output_len, "long", eos)
    shorts = await random_specs(tok, rng, count - n_long, cfg.input_len, cfg.output_len, "short", eos)
    specs = longs + shorts
    rng.shuffle(specs)
    return specs


async def _file(cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random) -> list[RequestSpec]:
    assert cfg.file is not None  # the config refuses the file workload without one
    return file_specs(cfg.file, count, cfg.output_len, cfg.ignore_eos, cfg.nonce)


def _trace_count(cfg: WorkloadConfig) -> int:
    return len(trace_lines(cfg))


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("random", _random, ignore_eos=True),
        Workload("unique-code", _unique_code, ignore_eos=False),
        Workload("shared-prefix", shared_prefix_specs, ignore_eos=True, shares_prefix=True),
        Workload("prefill", _prefill, ignore_eos=True),
        Workload("decode", _decode, ignore_eos=True),
        Workload("mixed", _mixed, ignore_eos=True),
        Workload("file", _file, ignore_eos=False, shares_prefix=True),
        Workload("trace", trace_specs, ignore_eos=True, shares_prefix=True, timed=True, count=_trace_count),
        Workload(
            "sessions", session_specs, ignore_eos=True, shares_prefix=True, timed=True, count=session_count,
            endpoint="chat",
        ),
    )
}


def measured_requests(cfg: WorkloadConfig, requests: int) -> int:
    """How many requests a level measures: the workload's own count (a trace's lines, sessions x turns),
    else ``requests``."""
    count = WORKLOADS[cfg.name].count
    return count(cfg) if count is not None else requests


async def build_specs(cfg: WorkloadConfig, tok: TokenCounter, count: int, salt: int = 0) -> list[RequestSpec]:
    """``count`` requests of the configured workload; ``salt`` varies prompts between levels/warm-up,
    and the workload's seed between runs."""
    rng = random.Random((cfg.seed or 0) * 1_000_003 + salt)
    return await WORKLOADS[cfg.name].build(cfg, tok, count, rng)


__all__ = [
    "LANGUAGES",
    "TASKS",
    "WORKLOADS",
    "RequestSpec",
    "Workload",
    "build_specs",
    "file_specs",
    "measured_requests",
    "random_specs",
    "unique_code_specs",
    "with_nonce",
]
