"""What a server's ``/v1/models`` lists, read strictly: a JSON object whose ``data`` is a list of objects,
each with a non-empty string ``id``. Anything else is the server's nonsense, said as a
:class:`~seatrial.errors.ServerError` with the reason (one reader for bench, accept and capacity)."""

from __future__ import annotations

from typing import Any

import orjson

from seatrial.errors import ServerError


def listed_models(body: bytes, where: str) -> list[dict[str, Any]]:
    """The entries of a ``/v1/models`` body (``where``: its URL, for the message)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ServerError(f"{where} is not JSON (UTF-8): {body[:80]!r}") from None
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(m, dict) for m in rows):
        raise ServerError(f"{where} is not a model list ({{'data': [{{'id': ...}}]}}): {body[:80]!r}")
    for m in rows:
        if not isinstance(m.get("id"), str) or not m["id"]:
            raise ServerError(f"{where} lists a model whose id is not a name: {m.get('id')!r}")
    return rows
