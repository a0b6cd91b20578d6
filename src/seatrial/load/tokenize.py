"""Count and build prompts in the *server's* tokens: its ``/tokenize`` and ``/detokenize`` endpoints
(vLLM, SGLang, llama.cpp), or a local ``tokenizer.json`` given with ``--tokenizer``.

The endpoints' shapes differ by engine: vLLM and SGLang take ``{"model", "prompt", "add_special_tokens"}``
and detokenize to ``{"prompt"}``; llama.cpp's ``llama-server`` takes ``{"content", "add_special"}`` and
detokenizes to ``{"content"}`` (given vLLM's shape it answers an empty token list). Which one a server
speaks is asked once, of ``GET /props``: llama-server answers it with its ``build_info``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

import aiohttp
import orjson

from seatrial.errors import ConfigError, SeatrialError, ServerError


class TokenCounter(Protocol):
    fault: type[SeatrialError]  # what a nonsensical answer is: the user's file (exit 2) or the server (exit 4)
    source: str

    async def encode(self, text: str) -> list[int]: ...
    async def count(self, text: str) -> int: ...
    async def decode(self, ids: list[int]) -> str: ...


class LocalTokenizer:
    """A Hugging Face ``tokenizer.json`` read with the ``tokenizers`` library (extra ``seatrial[tokenizer]``)."""

    fault: type[SeatrialError] = ConfigError

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ConfigError(
                "--tokenizer needs the 'tokenizers' package: pip install 'seatrial[tokenizer]'"
            ) from exc
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"--tokenizer: no tokenizer.json at {path}")
        self.source = f"--tokenizer {file}"
        try:
            self._tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # the library raises a bare Exception for any unreadable file
            raise ConfigError(f"--tokenizer: {file} is not a tokenizer.json: {str(exc)[:120]}") from None

    async def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    async def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=True).ids)

    async def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=False))


class ServerTokenizer:
    """The server's own tokenizer over HTTP. Counts exclude special tokens the server would add."""

    fault: type[SeatrialError] = ServerError
    source = "the server's /tokenize"

    def __init__(self, session: aiohttp.ClientSession, url: str, model: str, headers: dict[str, str]) -> None:
        self._session, self._url, self._model, self._headers = session, url, model, headers
        self._llamacpp: asyncio.Task[bool] | None = None

    async def is_llamacpp(self) -> bool:
        """Whether the server is llama.cpp's llama-server (its ``/props`` states ``build_info``); asked once."""
        if self._llamacpp is None:
            self._llamacpp = asyncio.ensure_future(self._ask_props())
        return await self._llamacpp

    async def _ask_props(self) -> bool:
        try:
            async with self._session.get(f"{self._url}/props", headers=self._headers) as resp:
                data = await resp.json(content_type=None) if resp.status == 200 else None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
            return False
        return isinstance(data, dict) and "build_info" in data and "default_generation_settings" in data

    async def _post(self, path: str, payload: dict[str, object]) -> dict[str, object]:
        try:
            return await self._post_once(path, payload)
        except aiohttp.ServerDisconnectedError:  # a kept-alive socket closed under us: idempotent, retry once
            return await self._post_once(path, payload)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise ServerError(f"{path}: {type(exc).__name__}: {exc}") from exc

    async def _post_once(self, path: str, payload: dict[str, object]) -> dict[str, object]:
        async with self._session.post(f"{self._url}{path}", json=payload, headers=self._headers) as resp:
            if resp.status != 200:
                text = (await resp.read())[:200].decode(errors="replace")
                raise ServerError(
                    f"{path} answered HTTP {resp.status}: {text}; pass --tokenizer PATH instead"
                )
            body = await resp.read()
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            raise ServerError(f"{path} answered what is not a JSON object: {body[:80]!r}")
        return data

    async def _tokens(self, text: str, special: bool) -> list[int]:
        payload: dict[str, object] = (
            {"content": text, "add_special": special}
            if await self.is_llamacpp()
            else {"model": self._model, "prompt": text, "add_special_tokens": special}
        )
        data = await self._post("/tokenize", payload)
        tokens, count = data.get("tokens"), data.get("count")
        if not isinstance(tokens, list) or not all(type(t) is int for t in tokens):
            raise ServerError(f"/tokenize returned no list of token ids: {str(tokens)[:80]}")
        if count is not None and count != len(tokens):
            raise ServerError(f"/tokenize is inconsistent: 'count' {count!r} for {len(tokens)} tokens")
        return tokens

    async def encode(self, text: str) -> list[int]:
        return await self._tokens(text, special=False)

    async def count(self, text: str) -> int:
        return len(await self._tokens(text, special=True))

    async def decode(self, ids: list[int]) -> str:
        if await self.is_llamacpp():
            return str((await self._post("/detokenize", {"tokens": ids})).get("content", ""))
        data = await self._post("/detokenize", {"model": self._model, "tokens": ids})
        return str(data.get("prompt", ""))

    async def count_chat(self, messages: list[dict[str, str]]) -> int | None:
        """Prompt tokens of a chat request after the server's template, when the server can say (llama.cpp's
        /tokenize does not template a chat: None)."""
        if await self.is_llamacpp():
            return None
        payload = {"model": self._model, "messages": messages, "add_generation_prompt": True}
        try:
            data = await self._post("/tokenize", payload)
        except ServerError:
            return None
        count = data.get("count")
        return int(count) if isinstance(count, int) else None


async def exact_text(
    tok: TokenCounter, pool: list[int], start: int, n: int, max_iter: int = 8, shifts: int = 8
) -> str:
    """Text that the server counts as exactly ``n`` prompt tokens, cut from ``pool`` at ``start``.

    Decoding ids and re-encoding the text can merge or split tokens at the cut, so the window is
    adjusted until the round trip gives ``n``. A window length that comes round again would only repeat
    itself (the round trip is deterministic): the cut then moves one token on, up to ``shifts`` times.
    """
    tried: list[tuple[int, int]] = []  # (window length, count) of every miss, for the error
    for shift in range(shifts):
        want, seen = n, set()
        for _ in range(max_iter):
            if want in seen:
                break
            seen.add(want)
            ids = [pool[(start + shift + i) % len(pool)] for i in range(want)]
            text = await tok.decode(ids)
            got = await tok.count(text)
            if got == n:
                return text
            tried.append((want, got))
            want = max(1, want + (n - got))
    raise ServerError(
        f"could not build a prompt of exactly {n} tokens from {shifts} cuts (window -> count: "
        f"{', '.join(f'{w}->{g}' for w, g in tried[-6:])})"
    )
