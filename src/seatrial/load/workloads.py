"""Workloads: the prompts of a level, built before the clock starts.

random        exactly ``input_len`` prompt tokens (server's count), fixed output with ignore_eos
unique-code   distinct code-writing prompts: 20 tasks x 6 languages (seed 002), then numbered variants
shared-prefix ``num_prefixes`` prefixes of ``prefix_len`` tokens, each followed by distinct questions
prefill       long input, 1 output token
decode        short input, long output
mixed         ``long_share`` of long-prefill requests (kind "long") among decode streams (kind "short")
file          the user's JSONL: {"prompt": str} or {"messages": [...]}, optional "output_len"
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import ConfigError
from seatrial.load.config import WorkloadConfig
from seatrial.load.tokenize import TokenCounter, exact_text

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


@dataclass
class RequestSpec:
    """One request to send. ``prompt`` is text (completions) or messages (chat)."""

    prompt: str | list[dict[str, str]]
    output_len: int
    expected_prompt_tokens: int | None = None
    kind: str = "default"
    ignore_eos: bool = True


def words_text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


async def token_pool(tok: TokenCounter, rng: random.Random, size: int) -> list[int]:
    """Server token ids of random natural words: material to cut exact-length prompts from."""
    ids = await tok.encode(words_text(rng, max(64, size)))
    if len(ids) < 16:
        raise ConfigError("the tokenizer returned too few tokens to build prompts")
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
    tok: TokenCounter, rng: random.Random, cfg: WorkloadConfig, count: int
) -> list[RequestSpec]:
    pool = await token_pool(tok, rng, cfg.prefix_len * 2 + cfg.input_len * 2 + 64)
    prefixes = [
        await exact_text(tok, pool, rng.randrange(len(pool)), cfg.prefix_len) for _ in range(cfg.num_prefixes)
    ]
    specs = []
    for i in range(count):
        question = await exact_text(tok, pool, rng.randrange(len(pool)), cfg.input_len)
        text = prefixes[i % cfg.num_prefixes] + "\n" + question
        specs.append(
            RequestSpec(
                text, cfg.output_len, await tok.count(text), f"prefix{i % cfg.num_prefixes}", cfg.ignore_eos
            )
        )
    return specs


def with_nonce(prompt: str | list[dict[str, str]], nonce: str) -> str | list[dict[str, str]]:
    """The prompt with ``[nonce] `` in front of its text (of a chat, in front of its first message)."""
    if not nonce:
        return prompt
    if isinstance(prompt, str):
        return f"[{nonce}] {prompt}"
    first = dict(prompt[0])
    first["content"] = f"[{nonce}] {first.get('content', '')}"
    return [first, *prompt[1:]]


def file_specs(
    path: Path, count: int, default_output_len: int, eos: bool, nonce: str = ""
) -> list[RequestSpec]:
    if not path.is_file():
        raise ConfigError(f"--file: {path} does not exist")
    rows: list[dict[str, Any]] = []
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{lineno}: not JSON ({exc})") from None
        if not isinstance(row, dict) or not ({"prompt", "messages"} & row.keys()):
            raise ConfigError(f"{path}:{lineno}: each line needs 'prompt' or 'messages'")
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


async def build_specs(cfg: WorkloadConfig, tok: TokenCounter, count: int, salt: int = 0) -> list[RequestSpec]:
    """``count`` requests of the configured workload; ``salt`` varies prompts between levels/warm-up,
    and the workload's seed between runs."""
    rng = random.Random((cfg.seed or 0) * 1_000_003 + salt)
    eos = cfg.ignore_eos
    if cfg.name == "random":
        return await random_specs(tok, rng, count, cfg.input_len, cfg.output_len, "default", eos)
    if cfg.name == "prefill":
        return await random_specs(tok, rng, count, cfg.input_len, 1, "prefill", eos)
    if cfg.name == "decode":
        return await random_specs(tok, rng, count, cfg.input_len, cfg.output_len, "decode", eos)
    if cfg.name == "unique-code":
        return unique_code_specs(count, cfg.output_len, eos, cfg.nonce)
    if cfg.name == "shared-prefix":
        return await shared_prefix_specs(tok, rng, cfg, count)
    if cfg.name == "mixed":
        n_long = round(count * cfg.long_share)
        longs = await random_specs(tok, rng, n_long, cfg.long_input_len, cfg.long_output_len, "long", eos)
        shorts = await random_specs(tok, rng, count - n_long, cfg.input_len, cfg.output_len, "short", eos)
        specs = longs + shorts
        rng.shuffle(specs)
        return specs
    assert cfg.file is not None
    return file_specs(cfg.file, count, cfg.output_len, eos, cfg.nonce)
