"""Is a level a valid measurement? It is not when the offered load was not delivered (client lag; of an
open loop, requests that did not leave at their scheduled times), output lengths were not honoured, or
errors passed the threshold. Each reason is stated."""

from __future__ import annotations

from typing import Any

import numpy as np

from seatrial.errors import ServerRefused
from seatrial.load.config import LoadConfig
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery

REFUSED = (401, 403)  # the server refuses the client: no key, a wrong one, or one without the right
MIN_IN_FLIGHT_SHARE = 0.9
MIN_RATE_SHARE = 0.95  # open loop: arrivals sent per second against the schedule's own rate
LATENESS_FLOOR_MS = 10.0  # open loop: send lateness p99 allowed, at least ...
LATENESS_GAP_SHARE = 0.05  # ... or this share of the schedule's median inter-arrival
MERGED_MAX_SHARE = 0.01  # token events that shared a per-read stamp with a later one, at most


def check_refused(records: list[RequestRecord]) -> None:
    """Raise :class:`ServerRefused` when the server answered every request 401/403: nothing can be measured
    (not an SLO missed, nor a level that failed)."""
    if records and all(r.status in REFUSED for r in records):
        statuses = "/".join(f"HTTP {s}" for s in sorted({r.status for r in records if r.status}))
        raise ServerRefused(
            f"the server refused all {len(records)} requests ({statuses}): check the API key (--api-key-env)"
        )


def lateness(records: list[RequestRecord]) -> dict[str, Any] | None:
    """Send lateness of an open-loop level (see :class:`seatrial.runs.summaries.bench.Lateness`): each
    request's ``sent_ms - scheduled_ms``, with the part of it that was the wait for a free slot under
    ``--max-concurrency`` (``cap_wait_ms``) and the client's own part (the rest)."""
    if not records:
        return None
    late = np.asarray([r.sent_ms - r.scheduled_ms for r in records])
    cap = np.asarray([r.cap_wait_ms for r in records])
    gaps = np.diff(np.sort([r.scheduled_ms for r in records]))
    median_gap = float(np.median(gaps)) if len(gaps) else None
    threshold = max(LATENESS_FLOOR_MS, LATENESS_GAP_SHARE * (median_gap or 0.0))
    p99, cap_p99, client_p99 = (float(np.percentile(x, 99)) for x in (late, cap, late - cap))
    cause = None
    if p99 > threshold:
        cause = "max-concurrency" if cap_p99 >= client_p99 else "client"
    return {
        "p50_ms": float(np.percentile(late, 50)), "p99_ms": p99, "max_ms": float(late.max()),
        "cap_wait_ms_p99": cap_p99, "cap_wait_ms_max": float(cap.max()), "client_ms_p99": client_p99,
        "median_interarrival_ms": median_gap, "threshold_ms": threshold,
        "late_requests": int((late > threshold).sum()), "cause": cause,
    }  # fmt: skip


def lateness_reason(late: dict[str, Any], cap: int, cpu_wait_ms: float | None = None) -> str | None:
    """Why a level whose send lateness p99 passed its threshold is invalid, naming the cause (and, where
    the client was late, how long its loop waited for a CPU: a busy host delays the sends)."""
    if late["cause"] is None:
        return None
    gap = late["median_interarrival_ms"]
    head = (
        f"send lateness p99 {late['p99_ms']:.1f} ms > {late['threshold_ms']:.1f} ms (max(10 ms, 5% of the "
        f"median inter-arrival {gap or 0:.1f} ms)): {late['late_requests']} requests left after their scheduled time"
    )
    if late["cause"] == "max-concurrency":
        return (
            f"{head}; caused by --max-concurrency {cap}: they waited for a free slot (p99 "
            f"{late['cap_wait_ms_p99']:.1f} ms), the client itself was late by {late['client_ms_p99']:.1f} ms at p99"
        )
    busy = f", its loop's thread waited {cpu_wait_ms:,.0f} ms in all for a CPU" if cpu_wait_ms else ""
    return f"{head}; the client was late (the cap's wait p99 {late['cap_wait_ms_p99']:.1f} ms{busy})"


def invalid_reasons(
    records: list[RequestRecord], delivery: Delivery, load: LoadConfig, concurrency: int, closed_loop: bool,
    cpu_wait_ms: float | None = None,
) -> list[str]:  # fmt: skip
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
    late = None if closed_loop else lateness(records)
    why = lateness_reason(late, concurrency, cpu_wait_ms) if late else None
    if why:
        reasons.append(why)
    merged = token_times_reason(records)
    if merged:
        reasons.append(merged)
    expected = min(concurrency, n)
    if closed_loop and n > concurrency and delivery.mean_in_flight < MIN_IN_FLIGHT_SHARE * expected:
        reasons.append(
            f"mean in flight {delivery.mean_in_flight:.2f} < {MIN_IN_FLIGHT_SHARE:.0%} of concurrency {expected}"
        )
    return reasons


def token_times_reason(records: list[RequestRecord]) -> str | None:
    """Why the level's token times are not exact, if they are not: more than ``MERGED_MAX_SHARE`` of the
    token events of requests timed per read (stamps ``kernel`` or ``user``, not ``packet``) arrived in one
    read with a later event and share its stamp. Per read, a client that fell a whole gap behind and a
    server that sent them together look alike; either way ITL reads 0 there and TPOT reads low."""
    per_read = [r for r in records if r.ok and r.stamps != "packet"]
    events = sum(r.chunks for r in per_read)
    merged = sum(r.merged_events for r in per_read)
    if not events or merged / events <= MERGED_MAX_SHARE:
        return None
    return (
        f"token times not exact: {merged} of {events} token events ({merged / events:.1%}) were read "
        f"together with a later one and share its stamp (> {MERGED_MAX_SHARE:.0%}): ITL and TPOT read low; "
        "per-segment stamps (a packet capture: run as root or with CAP_NET_RAW) keep each token's time"
    )


def prompt_mismatches(records: list[RequestRecord]) -> int:
    """Requests whose server-counted prompt differs from what the workload built (flagged, not invalid)."""
    return sum(
        1
        for r in records
        if r.ok
        and r.expected_prompt_tokens is not None
        and r.prompt_tokens not in (None, r.expected_prompt_tokens)
    )
