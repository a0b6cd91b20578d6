"""Is a level a valid measurement? It is not when the offered load was not delivered (client lag),
output lengths were not honoured, or errors passed the threshold. Each reason is stated."""

from __future__ import annotations

import numpy as np

from seatrial.load.config import LoadConfig
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery

MIN_IN_FLIGHT_SHARE = 0.9
MIN_RATE_SHARE = 0.95  # open loop: arrivals sent per second against the schedule's own rate


def invalid_reasons(
    records: list[RequestRecord], delivery: Delivery, load: LoadConfig, concurrency: int, closed_loop: bool
) -> list[str]:
    reasons: list[str] = []
    n = len(records)
    if n == 0:
        return ["no request completed"]
    failed = [r for r in records if not r.ok]
    if len(failed) / n > load.max_error_rate:
        first = failed[0].error or "unknown"
        reasons.append(
            f"{len(failed)}/{n} requests failed (limit {load.max_error_rate:.0%}); first: {first[:160]}"
        )
    short = [
        r
        for r in records
        if r.ok and r.expected_output_tokens and r.output_tokens != r.expected_output_tokens
    ]
    if short:
        r = short[0]
        reasons.append(
            f"{len(short)} requests did not return the asked output length "
            f"(e.g. {r.request_id}: {r.output_tokens} of {r.expected_output_tokens})"
        )
    lags = np.asarray([r.lag_ms for r in records])
    p99_lag = float(np.percentile(lags, 99))
    if p99_lag > load.max_lag_ms:
        reasons.append(
            f"client lag p99 {p99_lag:.1f} ms > {load.max_lag_ms:.0f} ms: the client did not deliver the load"
        )
    scheduled, achieved = delivery.scheduled_rate, delivery.achieved_rate
    if not closed_loop and scheduled and (achieved or 0.0) < MIN_RATE_SHARE * scheduled:
        reasons.append(
            f"arrivals were sent at {achieved or 0:.3g}/s, below {MIN_RATE_SHARE:.0%} of the schedule's "
            f"{scheduled:.3g}/s: the load was not delivered (raise --max-concurrency or lower --rate)"
        )
    expected = min(concurrency, n)
    if closed_loop and n > concurrency and delivery.mean_in_flight < MIN_IN_FLIGHT_SHARE * expected:
        reasons.append(
            f"mean in flight {delivery.mean_in_flight:.2f} < {MIN_IN_FLIGHT_SHARE:.0%} of concurrency {expected}"
        )
    return reasons


def prompt_mismatches(records: list[RequestRecord]) -> int:
    """Requests whose server-counted prompt differs from what the workload built (flagged, not invalid)."""
    return sum(
        1
        for r in records
        if r.ok
        and r.expected_prompt_tokens is not None
        and r.prompt_tokens not in (None, r.expected_prompt_tokens)
    )
