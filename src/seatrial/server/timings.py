"""The per-request timing an engine states in its own answer, in the fields of a record's ``server_timing``
(the OTLP spans' fields, seatrial.server.otlp, plus the token counts it states).

llama.cpp's ``llama-server`` puts ``timings`` in the last chunk of every stream: ``prompt_ms`` from the moment a
slot took the request to its first sampled token, ``predicted_ms`` from that token to the last, their token
counts ``prompt_n`` (processed) and ``predicted_n``, and ``cache_n`` (prompt tokens reused from its cache). It
states no queue time (a request waiting for a slot is outside both), so ``queue_ms`` is None and its
``ttft_ms`` and ``e2e_ms`` are from the slot's start, not from the request's arrival.
"""

from __future__ import annotations

from typing import Any


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def llamacpp_timing(timings: dict[str, Any]) -> dict[str, float | None]:
    """``server_timing`` from llama-server's ``timings`` object. ``tpot_ms`` is measured as the client's is:
    (last token − first token) / (tokens − 1)."""
    prompt_ms, predicted_ms = _num(timings.get("prompt_ms")), _num(timings.get("predicted_ms"))
    n = _num(timings.get("predicted_n"))
    tpot = predicted_ms / (n - 1) if predicted_ms is not None and n is not None and n > 1 else None
    e2e = prompt_ms + predicted_ms if prompt_ms is not None and predicted_ms is not None else None
    return {
        "queue_ms": None,
        "prefill_ms": prompt_ms,
        "decode_ms": predicted_ms,
        "ttft_ms": prompt_ms,
        "e2e_ms": e2e,
        "tpot_ms": tpot,
        "prompt_n": _num(timings.get("prompt_n")),
        "cache_n": _num(timings.get("cache_n")),
        "predicted_n": n,
    }
