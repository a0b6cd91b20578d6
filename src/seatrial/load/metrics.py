"""Per-level metrics computed from records, each declared once in :mod:`seatrial.load.metric_table`.

Definitions (also in docs/metrics.md):
- TTFT: send to the first chunk that carries an output token (of any kind, reasoning included).
- TTFA: send to the first chunk that carries an answer token (not reasoning only); over the ok requests
  whose stream carried one.
- TPOT: (last token time − TTFT) / (output_tokens − 1), per request; requests with < 2 tokens excluded.
- ITL: the gap between consecutive token-carrying chunks, divided by the tokens the later chunk carried.
- E2E: send to the end of the stream (``[DONE]``).
- reasoning_tokens, answer_tokens: the output tokens of chunks that carried reasoning only, and the rest.
- output_tok_s: output tokens of ok requests / level duration; total_tok_s adds prompt tokens.
- duration_s: first send to last completion of the measured requests.
- per_user_output_tok_s: mean over ok requests of output_tokens / E2E (the speed one user sees).
- client_timing: how chunk times were taken (``stamps``: kernel receive times or user-space times),
  the p99 over requests of the longest read lag (arrival to handling), and events that arrived
  merged with a later one (the client fell a whole gap behind a stream; their ITL is not exact).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from seatrial.load.metric_table import DISTRIBUTIONS, METRICS, MetricDef
from seatrial.load.records import RequestRecord
from seatrial.stats import distribution


def values(metric: MetricDef, records: list[RequestRecord]) -> list[float]:
    """The records' values of ``metric`` (a gap metric's gaps, all together); records without one left out."""
    got = [metric.value(functools.partial(getattr, r)) for r in records]
    if metric.of == "gap":
        return [x for gaps in got for x in gaps]
    return [v for v in got if v is not None]


def duration_s(records: list[RequestRecord]) -> float:
    if not records:
        return 0.0
    start = min(r.send_ns for r in records)
    end = max(r.send_ns + int((r.e2e_ms or 0.0) * 1e6) for r in records)
    return (end - start) / 1e9


def throughput(records: list[RequestRecord]) -> dict[str, float | int | None]:
    ok = [r for r in records if r.ok]
    dur = duration_s(records)
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    in_tokens = sum(r.prompt_tokens or 0 for r in ok)
    per_user = values(METRICS["per_user_output_tok_s"], ok)
    return {
        "requests_ok": len(ok),
        "requests_failed": len(records) - len(ok),
        "duration_s": dur,
        "output_tokens": out_tokens,
        "prompt_tokens": in_tokens,
        "reasoning_tokens": sum(r.reasoning_tokens or 0 for r in ok),
        "answer_tokens": sum(r.answer_tokens or 0 for r in ok),
        "output_tok_s": out_tokens / dur if dur > 0 else None,
        "total_tok_s": (out_tokens + in_tokens) / dur if dur > 0 else None,
        "request_s": len(ok) / dur if dur > 0 else None,
        "per_user_output_tok_s": sum(per_user) / len(per_user) if per_user else None,
    }


def level_metrics(records: list[RequestRecord]) -> dict[str, Any]:
    """Throughput figures plus ``{mean,p50,p90,p95,p99,max}`` of each latency, over ok records."""
    ok = [r for r in records if r.ok]
    out: dict[str, Any] = throughput(records)
    for name in DISTRIBUTIONS:
        out[name] = distribution(values(METRICS[name], ok))
    return out


MERGED_NOTE_SHARE = 0.05
"""Above this share of token events arriving merged, ``client_timing`` carries a ``note``."""


def client_timing(
    records: list[RequestRecord], loop_lag: dict[str, float | None] | None = None, *, max_lag_ms: float
) -> dict[str, Any]:
    """How this level's chunk times were taken, how far behind the client ran, and how many requests'
    ITL is per chunk rather than per token (``itl_per_chunk_requests``: no usage in each chunk, and the
    server's total differs from the chunk count).

    Events merged into one read share its time. That is exact when the server wrote them together
    (a starved API server flushing several outputs) and not when the client was a whole gap behind
    the stream; per read the two look alike, and past a share the level is invalid (load.validity).
    With per-segment stamps (``stamps``: ``packet``, load.capture) each event keeps its own segment's
    time, and only events the server sent in one segment share one. ``read_lag_ms_p99`` is how long the newest bytes of a read waited for the client
    (p99 over requests of each one's longest wait): a lower bound of how far behind it ran.
    ``loop_lag`` (``loop_lag_ms_p99``, ``loop_lag_ms_max``: how late the event loop woke; ``cpu_wait_ms``:
    how long its thread was runnable without a CPU) catches a stalled client even when the kernel merged
    what it held back; above ``max_lag_ms`` it adds a note.
    """
    ok = [r for r in records if r.ok]
    sources = sorted({r.stamps for r in ok if r.stamps})
    lags = [r.read_lag_ms_max for r in ok if r.read_lag_ms_max is not None]
    chunks, merged = sum(r.chunks for r in ok), sum(r.merged_events for r in ok)
    out: dict[str, Any] = {
        "stamps": sources[0] if len(sources) == 1 else ("mixed" if sources else None),
        "read_lag_ms_p99": float(np.percentile(lags, 99)) if lags else None,
        "merged_events": merged,
    }
    # Without usage in each chunk a chunk counts one token; the server's total says where that was wrong.
    merged_tokens = [
        r for r in ok if not r.usage_per_chunk and r.output_tokens is not None and r.chunks != r.output_tokens
    ]
    out["itl_per_chunk_requests"] = len(merged_tokens)
    out.update(loop_lag or {})
    notes = []
    if merged_tokens:
        tokens, held = sum(r.output_tokens or 0 for r in merged_tokens), sum(r.chunks for r in merged_tokens)
        notes.append(
            f"{len(merged_tokens)} requests carried {tokens} tokens (the server's usage) in {held} chunks: the "
            "server put several tokens in a chunk (speculative decoding, a stream interval, or a token held back "
            "inside a UTF-8 character, as llama-server does), so their ITL "
            "values are gaps between chunks, not per token (TPOT is exact); --continuous-usage gives per-token ITL"
        )
    stalled = out.get("loop_lag_ms_p99")
    if stalled is not None and stalled > max_lag_ms:
        waited = out.get("cpu_wait_ms")
        notes.append(
            f"the client stalled: its event loop woke {stalled:.0f} ms late at p99 (> {max_lag_ms:.0f} ms), so "
            "tokens waited unread and TTFT, ITL and E2E include that wait; the host starved the client of "
            "CPU (on small hosts, a /metrics render by vLLM can: see docs/metrics.md)"
            + (f"; the loop's thread waited {waited:.0f} ms in all for a CPU" if waited is not None else "")
        )
    if chunks and merged / chunks > MERGED_NOTE_SHARE and out["stamps"] == "packet":
        notes.append(
            f"{merged} of {chunks} token events arrived in one TCP segment with a later one ({merged / chunks:.1%}): "
            "the server sent them together (their times are exact)"
        )
    elif chunks and merged / chunks > MERGED_NOTE_SHARE:
        notes.append(
            f"{merged} of {chunks} token events arrived merged with a later one ({merged / chunks:.1%}): "
            "their gaps are exact only if the server sent them together; if the client fell behind "
            "(read_lag_ms_p99 near the ITL), lower the concurrency or give the client more CPU"
        )
    if notes:
        out["note"] = "; ".join(notes)
    return out
