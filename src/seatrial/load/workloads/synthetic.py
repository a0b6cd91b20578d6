"""The synthetic workloads: prompts cut from the server's own tokens (exact lengths), or built from
templates (unique-code), each varied by the run's seed so no prompt is an earlier run's cache hit."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from seatrial.load.tokenize import TokenCounter, exact_text
from seatrial.load.workloads.spec import RequestSpec

if TYPE_CHECKING:
    from seatrial.load.config import WorkloadConfig

TASKS = (
    "an LRU cache",
    "a trie with prefix search",
    "Dijkstra's shortest path",
    "a JSON tokenizer",
    "a token-bucket rate limiter",
    "merge sort on linked lists",
    "a thread-safe bounded queue",
    "an interval tree",
    "a Bloom filter",
    "a CSV parser with quoting",
    "a consistent-hash ring",
    "a min-heap priority queue",
    "a union-find with path compression",
    "an expression evaluator",
    "a ring buffer logger",
    "a retrying HTTP client",
    "a topological sort",
    "a skip list",
    "a sparse matrix multiply",
    "a word-frequency counter over files",
)
LANGUAGES = ("Python", "Rust", "Go", "Java", "C++", "TypeScript")
WORDS = [
    "time",
    "person",
    "year",
    "way",
    "day",
    "thing",
    "man",
    "world",
    "life",
    "hand",
    "part",
    "child",
    "eye",
    "woman",
    "place",
    "work",
    "week",
    "case",
    "point",
    "government",
    "company",
    "number",
    "group",
    "problem",
    "fact",
    "model",
    "server",
    "token",
    "cache",
    "memory",
    "kernel",
    "layer",
    "river",
    "mountain",
    "garden",
    "window",
    "market",
    "signal",
    "engine",
    "harbor",
    "ship",
    "trial",
    "anchor",
    "compass",
    "storm",
]


def words_text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


async def token_pool(tok: TokenCounter, rng: random.Random, size: int) -> list[int]:
    """Server token ids of random natural words: material to cut exact-length prompts from."""
    n_words = max(64, size)
    ids = await tok.encode(words_text(rng, n_words))
    if len(ids) < 16:
        raise tok.fault(f"{tok.source} turned {n_words} words into {len(ids)} tokens: too few to build prompts")
    return ids


def distinct_starts(rng: random.Random, pool: int, count: int) -> list[int]:
    """Start positions in a token pool, all different while the pool has room (two prompts cut at the
    same start would be the same prompt, and the second a prefix-cache hit)."""
    starts: list[int] = []
    while len(starts) < count:
        starts += rng.sample(range(pool), min(pool, count - len(starts)))
    return starts


async def random_specs(
    tok: TokenCounter, rng: random.Random, count: int, input_len: int, output_len: int, kind: str, eos: bool
) -> list[RequestSpec]:
    pool = await token_pool(tok, rng, input_len * 2 + 64 + count)  # a distinct start for each
    specs = []
    for start in distinct_starts(rng, len(pool), count):
        text = await exact_text(tok, pool, start, input_len)
        specs.append(RequestSpec(text, output_len, input_len, kind, eos))
    return specs


def unique_code_specs(count: int, output_len: int, eos: bool, nonce: str = "") -> list[RequestSpec]:
    """Seed 002: distinct tasks x languages, so no two prompts share more than a template prefix; each
    starts with the run's nonce, so no prompt of an earlier run is in the server's cache."""
    specs = []
    tag = f"[{nonce}] " if nonce else ""
    for i in range(count):
        task, lang = TASKS[i % len(TASKS)], LANGUAGES[(i // len(TASKS)) % len(LANGUAGES)]
        variant = i // (len(TASKS) * len(LANGUAGES))
        extra = f" Variant {variant}: name every identifier with the suffix _v{variant}." if variant else ""
        text = (
            f"{tag}Write {task} in {lang} with unit tests and a short explanation of its complexity.{extra}"
        )
        specs.append(RequestSpec(text, output_len, None, "code", eos))
    return specs


async def shared_prefix_specs(
    cfg: WorkloadConfig, tok: TokenCounter, count: int, rng: random.Random
) -> list[RequestSpec]:
    n = cfg.num_prefixes
    pool = await token_pool(tok, rng, cfg.prefix_len * 2 + cfg.input_len * 2 + 64 + n + count)
    starts = distinct_starts(rng, len(pool), n + count)  # no two prefixes (nor two questions) the same
    prefixes = [await exact_text(tok, pool, start, cfg.prefix_len) for start in starts[:n]]
    specs = []
    for i, start in enumerate(starts[n:]):
        question = await exact_text(tok, pool, start, cfg.input_len)
        text = prefixes[i % cfg.num_prefixes] + "\n" + question
        specs.append(
            RequestSpec(
                text, cfg.output_len, await tok.count(text), f"prefix{i % cfg.num_prefixes}", cfg.ignore_eos
            )
        )
    return specs
