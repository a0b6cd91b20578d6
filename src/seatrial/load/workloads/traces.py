"""Recorded traces, read into :class:`TraceLine` rows (one per request, in file order).

Formats (``--trace-format``):

mooncake  JSONL: ``timestamp`` (ms), ``input_length``, ``output_length``, ``hash_ids`` (one id per
          512-token block of the prompt; equal ids are equal blocks). Conversations are not named in the
          file: a line continues an earlier one when its ``hash_ids`` begin with all of that line's full
          blocks (two or more) and its input holds at least that line's input and output (the conversation
          so far, the answer, a new message); the latest such line with the longest match is its parent.
azure     CSV (the Azure LLM inference traces): ``TIMESTAMP`` (ISO date and time), ``ContextTokens``,
          ``GeneratedTokens``.
burstgpt  CSV (BurstGPT): ``Timestamp`` (s), ``Request tokens``, ``Response tokens`` (0 for a request that
          failed in the trace: one token is asked for).
jsonl     JSONL: ``timestamp_ms`` and either ``input_length`` and ``output_length`` (optionally ``hash_ids``)
          or ``messages`` (or ``prompt`` text) with an optional ``output_length``; an optional ``session``
          names a conversation, whose lines are its turns in file order (each line's messages are the new
          ones of its turn: the conversation so far and the server's answers come before them).

``line`` is the request's 0-based line in a JSONL file, its 0-based data row in a CSV (the header not
counted). A bad file raises :class:`~seatrial.errors.ConfigError` naming the line.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from seatrial.errors import ConfigError
from seatrial.load.workloads.files import json_lines

MOONCAKE_BLOCK = 512  # tokens per hash id in Mooncake's traces
MAX_TOKENS = 10_000_000  # a length no open model's context reaches (Llama 4 Scout's is 10M): beyond is a broken file


@dataclass(frozen=True)
class TraceLine:
    """One request of a trace. ``prompt`` (messages or text) where the trace has one, else lengths and
    ``hash_ids``; ``after`` is the position (in the list read) of the turn this one follows."""

    line: int
    timestamp_ms: float
    output_len: int | None  # None: not in the trace (--output-len)
    input_len: int | None = None
    hash_ids: tuple[int, ...] | None = None
    prompt: str | list[dict[str, str]] | None = None
    session: int | None = None
    turn: int | None = None
    after: int | None = None


def read_trace(path: Path, fmt: str, start: int = 0, limit: int | None = None) -> list[TraceLine]:
    """The lines ``start`` to ``start + limit`` of the trace (all to the end without ``limit``); a turn
    whose previous turn is not among them starts its conversation there."""
    if not path.is_file():
        raise ConfigError(f"--trace: {path} does not exist")
    rows = list(PARSERS[fmt](path))
    if fmt == "mooncake":
        rows = _conversations(rows)
    if not rows:
        raise ConfigError(f"{path}: no requests")
    chosen = rows[start : None if limit is None else start + limit]
    if not chosen:
        raise ConfigError(f"--trace-start {start}: {path} has {len(rows)} requests")
    return _rebase(chosen, start)


def _rebase(rows: list[TraceLine], start: int) -> list[TraceLine]:
    """``after`` from positions in the whole file to positions in ``rows``; conversations numbered in the
    order of their first turn, and each turn's number in its conversation."""
    out: list[TraceLine] = []
    sessions = 0
    for row in rows:
        if row.session is None:
            out.append(row)
            continue
        after = row.after - start if row.after is not None and row.after >= start else None
        if after is None:  # a first turn (or the first one replayed)
            session, turn, sessions = sessions, 0, sessions + 1
        else:
            session, turn = out[after].session or 0, (out[after].turn or 0) + 1
        out.append(replace(row, after=after, session=session, turn=turn))
    return out


def _int(path: Path, where: int, row: dict[str, Any], key: str, minimum: int = 0) -> int:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value != int(value):
        raise ConfigError(f"{path}:{where}: {key!r} must be an integer >= {minimum}, got {value!r}")
    return _tokens(path, where, value, key, minimum)


def _tokens(path: Path, where: int, value: float, key: str, minimum: int = 0) -> int:
    """A length in tokens: an integer from ``minimum`` to :data:`MAX_TOKENS`."""
    if not minimum <= value <= MAX_TOKENS:
        raise ConfigError(
            f"{path}:{where}: {key!r} must be {minimum} to {MAX_TOKENS:,} tokens (no model's context is longer), "
            f"got {value!r}"
        )
    return int(value)


def _number(path: Path, where: int, value: Any, key: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{path}:{where}: {key!r} must be a number, got {value!r}") from None
    if not math.isfinite(out) or out < 0:
        raise ConfigError(f"{path}:{where}: {key!r} must be a finite number >= 0, got {value!r}")
    return out


def _prompt(path: Path, where: int, row: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    """A line's ``messages`` (chat messages: objects with a string ``role``) or ``prompt`` (text)."""
    if "messages" in row:
        messages = row["messages"]
        if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
        ):
            raise ConfigError(f"{path}:{where}: 'messages' must be a list of chat messages ({{'role': ..., 'content': ...}})")
        return messages
    if "prompt" in row:
        if not isinstance(row["prompt"], str) or not row["prompt"]:
            raise ConfigError(f"{path}:{where}: 'prompt' must be text, got {type(row['prompt']).__name__}")
        return row["prompt"]
    return None


def _hash_ids(path: Path, where: int, row: dict[str, Any], input_len: int) -> tuple[int, ...] | None:
    ids = row.get("hash_ids")
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
        raise ConfigError(f"{path}:{where}: 'hash_ids' must be a list of integers")
    need = -(-input_len // MOONCAKE_BLOCK)
    if len(ids) != need:
        raise ConfigError(
            f"{path}:{where}: {len(ids)} hash_ids for input_length {input_len}: expected {need} "
            f"(one per {MOONCAKE_BLOCK}-token block)"
        )
    return tuple(ids)


def _mooncake(path: Path) -> Iterator[TraceLine]:
    for i, row in json_lines(path):
        where = i + 1
        missing = {"timestamp", "input_length", "output_length", "hash_ids"} - row.keys()
        if missing:
            raise ConfigError(f"{path}:{where}: a Mooncake line needs {', '.join(sorted(missing))}")
        n_in = _int(path, where, row, "input_length", 1)
        yield TraceLine(i, _number(path, where, row["timestamp"], "timestamp"),
                        _int(path, where, row, "output_length"), n_in, _hash_ids(path, where, row, n_in))  # fmt: skip


def _jsonl(path: Path) -> Iterator[TraceLine]:
    sessions: dict[bytes, int] = {}  # a session's name -> the position of its latest turn
    for pos, (i, row) in enumerate(json_lines(path)):
        where = i + 1
        if "timestamp_ms" not in row:
            raise ConfigError(f"{path}:{where}: each line needs 'timestamp_ms'")
        ts = _number(path, where, row["timestamp_ms"], "timestamp_ms")
        prompt = _prompt(path, where, row)
        if prompt is not None:
            n_out = _int(path, where, row, "output_length", 1) if "output_length" in row else None
            line = TraceLine(i, ts, n_out, prompt=prompt)
        elif {"input_length", "output_length"} <= row.keys():
            n_in = _int(path, where, row, "input_length", 1)
            n_out = _int(path, where, row, "output_length")
            line = TraceLine(i, ts, n_out, n_in, _hash_ids(path, where, row, n_in))
        else:
            raise ConfigError(f"{path}:{where}: each line needs 'messages' (or 'prompt') or 'input_length' and 'output_length'")
        name = row.get("session")
        if name is not None:
            line = replace(line, session=0, after=sessions.get(orjson.dumps(name)))
            sessions[orjson.dumps(name)] = pos
        yield line


def _csv_rows(path: Path, columns: tuple[str, ...], fmt: str) -> Iterator[tuple[int, dict[str, str]]]:
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip() for f in reader.fieldnames or []]
    reader.fieldnames = fields
    missing = [c for c in columns if c not in fields]
    if missing:
        raise ConfigError(f"{path}: a {fmt} trace needs the columns {', '.join(columns)}; missing {', '.join(missing)}")
    yield from enumerate(reader)


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _azure_time(path: Path, where: int, text: str) -> datetime:
    try:  # 2023: seven fractional digits (Python reads six); 2024: an offset, a fraction or none
        return datetime.fromisoformat(_FRACTION.sub(r"\1", text.strip()))
    except ValueError:
        raise ConfigError(f"{path}:{where}: TIMESTAMP {text!r} is not a date and time") from None


def _azure(path: Path) -> Iterator[TraceLine]:
    first: datetime | None = None
    for i, row in _csv_rows(path, ("TIMESTAMP", "ContextTokens", "GeneratedTokens"), "azure"):
        where = i + 2
        at = _azure_time(path, where, row["TIMESTAMP"])
        first = first or at
        try:
            ms = (at - first).total_seconds() * 1000
        except TypeError:
            raise ConfigError(f"{path}:{where}: TIMESTAMP mixes times with and without a UTC offset") from None
        n_in = _tokens(path, where, _number(path, where, row["ContextTokens"], "ContextTokens"), "ContextTokens")
        n_out = _tokens(path, where, _number(path, where, row["GeneratedTokens"], "GeneratedTokens"), "GeneratedTokens")
        yield TraceLine(i, ms, n_out, max(1, n_in))


def _burstgpt(path: Path) -> Iterator[TraceLine]:
    for i, row in _csv_rows(path, ("Timestamp", "Request tokens", "Response tokens"), "burstgpt"):
        where = i + 2
        ts = _number(path, where, row["Timestamp"], "Timestamp") * 1000
        n_in = _tokens(path, where, _number(path, where, row["Request tokens"], "Request tokens"), "Request tokens")
        n_out = _tokens(path, where, _number(path, where, row["Response tokens"], "Response tokens"), "Response tokens")
        yield TraceLine(i, ts, n_out, max(1, n_in))


PARSERS: dict[str, Callable[[Path], Iterator[TraceLine]]] = {
    "mooncake": _mooncake,
    "azure": _azure,
    "burstgpt": _burstgpt,
    "jsonl": _jsonl,
}


def _conversations(rows: list[TraceLine]) -> list[TraceLine]:
    """Mooncake's conversations, from its hash ids (the module docstring's rule): each continuing line gets
    its parent (``after``) and, like its parent, a ``session`` (numbered by :func:`_rebase`). Prefixes are
    keyed by a chain of hashes, so that a line of B blocks costs B lookups."""
    full: dict[int, int] = {}  # key of a line's full blocks -> the latest line with exactly those
    out: list[TraceLine] = []
    for pos, row in enumerate(rows):
        ids, keys, key = row.hash_ids or (), [], 0
        for h in ids:
            key = hash((key, h))
            keys.append(key)
        parent = None
        for k in range(len(ids), 1, -1):
            cand = full.get(keys[k - 1])
            if cand is not None and (row.input_len or 0) >= (out[cand].input_len or 0) + (out[cand].output_len or 0):
                parent = cand
                break
        if parent is not None:
            out[parent] = replace(out[parent], session=0)
        out.append(replace(row, after=parent, session=None if parent is None else 0))
        n_full = (row.input_len or 0) // MOONCAKE_BLOCK
        if n_full >= 2:
            full[keys[n_full - 1]] = pos
    return out
