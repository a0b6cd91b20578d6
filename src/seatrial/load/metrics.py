"""Per-level metrics, each a small declared unit (name, unit, direction) computed from records.

Definitions (also in docs/metrics.md):
- TTFT: send to the first chunk that carries an output token.
- TPOT: (last token time − TTFT) / (output_tokens − 1), per request; requests with < 2 tokens excluded.
- ITL: the gap between consecutive token-carrying chunks, divided by the tokens the later chunk carried.
- E2E: send to the end of the stream (``[DONE]``).
- output_tok_s: output tokens of ok requests / level duration; total_tok_s adds prompt tokens.
- duration_s: first send to last completion of the measured requests.
- per_user_output_tok_s: mean over ok requests of output_tokens / E2E (the speed one user sees).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from seatrial.load.records import RequestRecord
from seatrial.load.stats import distribution


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    direction: Literal["lower", "higher"]
    values: Callable[[list[RequestRecord]], list[float]]


def _present(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None]


DISTRIBUTIONS = (
    Metric("ttft_ms", "ms", "lower", lambda rs: _present([r.ttft_ms for r in rs])),
    Metric("tpot_ms", "ms", "lower", lambda rs: _present([r.tpot_ms for r in rs])),
    Metric("itl_ms", "ms", "lower", lambda rs: [x for r in rs for x in r.itl_ms]),
    Metric("e2e_ms", "ms", "lower", lambda rs: _present([r.e2e_ms for r in rs])),
)


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
    per_user = [(r.output_tokens or 0) / (r.e2e_ms / 1000) for r in ok if r.e2e_ms]
    return {
        "requests_ok": len(ok),
        "requests_failed": len(records) - len(ok),
        "duration_s": dur,
        "output_tokens": out_tokens,
        "prompt_tokens": in_tokens,
        "output_tok_s": out_tokens / dur if dur > 0 else None,
        "total_tok_s": (out_tokens + in_tokens) / dur if dur > 0 else None,
        "request_s": len(ok) / dur if dur > 0 else None,
        "per_user_output_tok_s": sum(per_user) / len(per_user) if per_user else None,
    }


def level_metrics(records: list[RequestRecord]) -> dict[str, Any]:
    """Throughput figures plus ``{mean,p50,p90,p95,p99,max}`` of each latency, over ok records."""
    ok = [r for r in records if r.ok]
    out: dict[str, Any] = throughput(records)
    for metric in DISTRIBUTIONS:
        out[metric.name] = distribution(metric.values(ok))
    return out
