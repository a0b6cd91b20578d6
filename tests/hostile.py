"""A tiny OpenAI-compatible server that answers what a test tells it to: a ``/v1/models`` body, a
``/tokenize`` body, an HTTP status for every request, and a stream whose chunks turn bad from a given
request on. It runs in a thread (as ``seatrial.testing.server.ThreadedServer``); the synthetic server
stays the honest one."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

GOOD_MODELS: Any = {"object": "list", "data": [{"id": "hostile"}]}


@dataclass
class Hostile:
    models: Any = field(default_factory=lambda: GOOD_MODELS)  # bytes: sent as they are
    tokenize: Any = None  # None: a consistent word tokenizer; bytes: sent as they are; else: as JSON
    status: int = 200  # every completion request answered with this status when not 200
    bad_chunk: bytes | None = None  # the event sent instead of the second token's, from request bad_from on
    bad_from: int = 0
    counter: itertools.count[int] = field(default_factory=itertools.count)


def _body(value: Any) -> web.Response:
    data = value if isinstance(value, bytes) else orjson.dumps(value)
    return web.Response(body=data, content_type="application/json")


def _event(choice_text: str, usage: dict[str, int] | None = None) -> bytes:
    event: dict[str, Any] = {"id": "x", "choices": [{"index": 0, "text": choice_text, "finish_reason": None}]}
    if usage is not None:
        event["usage"] = usage
    return b"data: " + orjson.dumps(event) + b"\n\n"


async def _completions(request: web.Request) -> web.StreamResponse:
    h: Hostile = request.app["hostile"]
    body = await request.json()
    index = next(h.counter)
    if h.status != 200:
        return web.json_response({"error": {"message": "no"}}, status=h.status)
    n = int(body.get("max_tokens") or 4)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for i in range(1, n + 1):
        if i == 2 and h.bad_chunk is not None and index >= h.bad_from:
            await resp.write(h.bad_chunk)
            continue
        await resp.write(_event(f" w{i}"))
        await asyncio.sleep(0.001)
    usage = {"prompt_tokens": 4, "completion_tokens": n, "total_tokens": n + 4}
    await resp.write(b"data: " + orjson.dumps({"id": "x", "choices": [], "usage": usage}) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def _tokenize(request: web.Request) -> web.Response:
    h: Hostile = request.app["hostile"]
    if h.tokenize is not None:
        return _body(h.tokenize)
    body = await request.json()
    tokens = [int(w[1:]) if w[1:].isdigit() else 7 for w in str(body.get("prompt", "")).split()]
    return _body({"count": len(tokens), "tokens": tokens, "max_model_len": 4096})


async def _detokenize(request: web.Request) -> web.Response:
    body = await request.json()
    return _body({"prompt": " ".join(f"w{int(t)}" for t in body.get("tokens", []))})


async def _models(request: web.Request) -> web.Response:
    return _body(request.app["hostile"].models)


async def _metrics(request: web.Request) -> web.Response:
    return web.Response(text="", content_type="text/plain")


@contextmanager
def serve(h: Hostile) -> Iterator[str]:
    """The server's base URL while the block runs."""
    app = web.Application()
    app["hostile"] = h
    for path, handler in (("/v1/completions", _completions), ("/v1/chat/completions", _completions),
                          ("/tokenize", _tokenize), ("/detokenize", _detokenize)):  # fmt: skip
        app.router.add_post(path, handler)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/metrics", _metrics)
    loop = asyncio.new_event_loop()
    ready, urls = threading.Event(), []

    def run() -> None:
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        urls.append(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}")  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield urls[0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
