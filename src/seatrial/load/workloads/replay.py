"""The ``trace`` workload: a recorded trace's requests (load.workloads.traces), each at its time.

Prompts are exact in the server's tokens and built from token ids, so no block boundary is re-tokenized:
every hash id is one block of B tokens (``--trace-block-tokens``, default 512, Mooncake's block), drawn
from the server's own vocabulary by a random generator seeded with the run's seed and the hash id, so that
equal ids are equal blocks within a run and no block of one run is in the next run's cache. A prompt of
L tokens is its first ceil(L / B) hash ids' blocks, cut to L; blocks the trace does not name (lines
without hash ids, or beyond them) are the line's own. B other than 512 scales every length by B/512:
``max(1, length * B // 512)``, so a long trace fits a small model. Prompts the trace gives as text or
messages are sent as they are (with the run's nonce in front of a conversation's first turn).
A line is sent ``(timestamp - first timestamp) / speedup`` after the level's start; a conversation's
turn also waits for its previous turn's answer.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from seatrial.errors import ConfigError
from seatrial.load.tokenize import TokenCounter
from seatrial.load.workloads.files import with_nonce
from seatrial.load.workloads.spec import RequestSpec
from seatrial.load.workloads.synthetic import token_pool
from seatrial.load.workloads.traces import MOONCAKE_BLOCK, TraceLine, read_trace

if TYPE_CHECKING:
    from seatrial.load.config import WorkloadConfig

POOL_TOKENS = 4096  # server token ids the blocks are drawn from
MAX_REPLAY_S = 31 * 86400  # a month: no load test replays longer


def trace_lines(cfg: WorkloadConfig) -> list[TraceLine]:
    assert cfg.trace is not None and cfg.trace_format is not None  # the config refuses a trace without them
    lines = read_trace(cfg.trace, cfg.trace_format, cfg.trace_start, cfg.trace_limit)
    stamps = [line.timestamp_ms for line in lines]
    check_span(cfg, (max(stamps) - min(stamps)) / 1000 / cfg.speedup)
    return lines


def check_span(cfg: WorkloadConfig, span_s: float) -> None:
    """A replay longer than :data:`MAX_REPLAY_S` is a broken trace or a missing ``--speedup``."""
    if span_s > MAX_REPLAY_S:
        raise ConfigError(
            f"--trace {cfg.trace}: replaying its lines would take {span_s / 86400:.3g} days at --speedup "
            f"{cfg.speedup:g} (more than {MAX_REPLAY_S // 86400} days): check its timestamps, or pass --speedup "
            "or --trace-limit"
        )


def scaled(n: int, block_tokens: int) -> int:
    """A trace's length at ``block_tokens`` per 512-token block: ``max(1, n * B // 512)``."""
    return max(1, n * block_tokens // MOONCAKE_BLOCK)


class Blocks:
    """Deterministic blocks of ``size`` server token ids, one per key, from the run's ``salt``."""

    def __init__(self, pool: list[int], size: int, salt: int) -> None:
        self.pool, self.size, self.salt = pool, size, salt
        self.made: dict[object, list[int]] = {}

    def __getitem__(self, key: object) -> list[int]:
        if key not in self.made:
            rng = random.Random(f"{self.salt}:{key}")
            self.made[key] = [self.pool[rng.randrange(len(self.pool))] for _ in range(self.size)]
        return self.made[key]

    def prompt(self, line: TraceLine, length: int) -> list[int]:
        """``length`` ids: the line's hash-id blocks, then blocks of its own."""
        n = -(-length // self.size)
        named = (line.hash_ids or ())[:n]
        keys: list[object] = [*named, *(("own", line.line, k) for k in range(len(named), n))]
        return [t for key in keys for t in self[key]][:length]


async def trace_specs(
    cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random
) -> list[RequestSpec]:
    """The trace's first ``count`` selected lines as specs (``trace_line``, ``at_s``, ``after``,
    ``session``, ``turn`` from the trace)."""
    lines = trace_lines(cfg)[:count]
    b = cfg.trace_block_tokens
    blocks = Blocks(await token_pool(tok, rng, POOL_TOKENS), b, rng.getrandbits(64))
    t0 = min(line.timestamp_ms for line in lines)
    specs = []
    for line in lines:
        at_s = (line.timestamp_ms - t0) / 1000 / cfg.speedup
        out = cfg.output_len if line.output_len is None else scaled(line.output_len, b)
        if line.prompt is not None:
            prompt = line.prompt if line.after is not None else with_nonce(line.prompt, cfg.nonce)
            spec = RequestSpec(prompt, out, None, "trace", cfg.ignore_eos)
        else:
            n_in = scaled(line.input_len or 1, b)
            spec = RequestSpec(blocks.prompt(line, n_in), out, n_in, "trace", cfg.ignore_eos)
        spec.at_s, spec.after, spec.trace_line = at_s, line.after, line.line
        spec.session, spec.turn = line.session, line.turn
        specs.append(spec)
    return specs


def prefix_hits_allowed(specs: list[RequestSpec], block_size: int) -> int | None:
    """Prompt tokens an engine's prefix cache can serve for the specs' token-id prompts, sent in order of
    their times: per prompt, the whole blocks of ``block_size`` from its start that an earlier prompt
    already had (a block is cached by its content and everything before it, as vLLM hashes them), at most
    all but its last token (an engine computes that one). None where a prompt is not token ids."""
    seen: set[int] = set()
    total = 0
    for spec in sorted(specs, key=lambda s: s.at_s or 0.0):
        ids = spec.prompt
        if not (isinstance(ids, list) and ids and isinstance(ids[0], int)):
            return None
        chain, keys = 0, []
        for k in range(len(ids) // block_size):
            chain = hash((chain, tuple(ids[k * block_size : (k + 1) * block_size])))
            keys.append(chain)
        usable, hit = (len(ids) - 1) // block_size, 0
        while hit < usable and keys[hit] in seen:
            hit += 1
        total += hit * block_size
        seen.update(keys)
    return total
