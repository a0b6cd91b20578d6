"""Is a level a valid measurement? It is not when the offered load was not delivered (client lag; of an
open loop, arrivals that are not the named load within their own sampling error), output lengths were not
honoured, or errors passed the threshold. Each reason is stated.

An open loop's delivered arrivals (the send times) are judged against the schedule it drew (the named
load: a Poisson schedule's own rate and dispersion differ from the nominal ones by chance, so the schedule
is the yardstick), each statistic against its own sampling error from the level's n arrivals:

- rate: the sent rate may fall short of the schedule's by max(5%, half the standard error of a rate from
  n arrivals, cv / sqrt(n - 1), cv the schedule's gaps' coefficient of variation);
- dispersion: the sent gaps' squared coefficient of variation (CV^2) must stay within the band n gaps of
  the named arrival process give it, its CV^2 +- max(0.05, 1.96 standard errors) (gamma of shape k: 1/k
  +- 1.96 sqrt((2/k^2 + 2/k^3) / (n - 1)), Poisson k = 1: 1 +- 0.33 at 139 arrivals; constant: 0 +- 0.05),
  unless the schedule itself lay as far out (chance, not the client): the sends are invalid when they
  are outside the band and farther from the law than the schedule by more than 0.05. A ramp or a trace
  has no such law: the band is then around the schedule's own CV^2, its standard error by the delta
  method from the schedule's gaps. A client that stalls sends what fell due meanwhile as one burst; one
  that paces itself makes the sends more regular;
- lateness: the p99 of ``sent - scheduled`` may reach max(10 ms, one mean gap of the schedule).

Half a standard error: a rate biased by half its own sampling error has a root-mean-square error at most
12% larger (sqrt(1 + 0.5^2)); 5% is the capacity search's default precision. Lateness of a fraction of a
gap does not change a Poisson load: a Poisson process whose points are each displaced independently
stays a Poisson process of the same rate (though its gaps, compared pair by pair with the schedule's,
spread: so the dispersion is judged against the law, not the schedule). What a stall does to it (a
burst) shows in the lateness beyond a gap and in the dispersion. The rule's false-INVALID rate under a
busy client is measured in ``benchmarks/lateness_gate.py``.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from seatrial.errors import ServerRefused
from seatrial.load.config import LoadConfig
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery

REFUSED = (401, 403)  # the server refuses the client: no key, a wrong one, or one without the right
MIN_IN_FLIGHT_SHARE = 0.9
RATE_FLOOR = 0.05  # open loop: a shortfall of the sent rate against the schedule's always allowed
DISPERSION_FLOOR = 0.05  # open loop: the gaps' squared CV band's least half-width, and the least move out
SAMPLING_SHARE = 0.5  # the rate's shortfall allowed: this share of its own standard error from n arrivals
BAND_Z = 1.96  # the dispersion band: the named law's CV^2 +- this many of its standard errors
LATENESS_FLOOR_MS = 10.0  # open loop: send lateness p99 allowed, at least ...
LATENESS_GAPS = 1.0  # ... or this many mean gaps of the schedule
MERGED_MAX_SHARE = 0.01  # token events that shared a per-read stamp with a later one, at most
STARVED_SHARE = 0.05  # the client's loop waited for a CPU this share of the level's time or more


def _gaps(times_ms: list[float]) -> np.ndarray:
    return np.diff(np.sort(np.asarray(times_ms, dtype=float)))


def cv2_se(gaps: np.ndarray) -> float:
    """Standard error of the gaps' squared coefficient of variation (variance / mean^2) estimated from
    ``len(gaps)`` independent gaps of this law (delta method with the gaps' own moments; 2 / sqrt(n) for
    exponential gaps, 0 for constant ones)."""
    n = len(gaps)
    m = float(gaps.mean()) if n else 0.0
    if n < 2 or m <= 0:
        return 0.0
    d = gaps - m
    v, mu3, mu4 = float((d**2).mean()), float((d**3).mean()), float((d**4).mean())
    var = (mu4 - v**2) / m**4 + 4 * v**3 / m**6 - 4 * v * mu3 / m**5
    return math.sqrt(max(var, 0.0) / n)


def law_cv2(shape: float, gaps: int) -> tuple[float, float]:
    """The squared CV of gamma gaps of ``shape`` k (Poisson: 1; constant: inf) and its standard error
    from ``gaps`` of them (delta method: sqrt((2/k^2 + 2/k^3) / gaps))."""
    if math.isinf(shape):
        return 0.0, 0.0
    return 1 / shape, math.sqrt((2 / shape**2 + 2 / shape**3) / gaps)


def arrivals(records: list[RequestRecord], shape: float | None = None) -> dict[str, Any] | None:
    """An open loop's delivered arrivals against its schedule and its named law (``shape``: the gamma
    shape of its gaps, 1 for Poisson, inf for constant; None for a ramp or a trace): rates, the gaps'
    squared CV, and what each may differ by (see the module's rule). None below 3 requests."""
    if len(records) < 3:
        return None
    due, sent = _gaps([r.scheduled_ms for r in records]), _gaps([r.sent_ms for r in records])
    n = len(records)
    if due.sum() <= 0 or sent.sum() <= 0:
        return None
    rate_s, rate_d = (n - 1) / (due.sum() / 1000), (n - 1) / (sent.sum() / 1000)
    cv2_s, cv2_d = float(due.var(ddof=1) / due.mean() ** 2), float(sent.var(ddof=1) / sent.mean() ** 2)
    center, se = law_cv2(shape, n - 1) if shape is not None else (cv2_s, cv2_se(due))
    half = max(DISPERSION_FLOOR, BAND_Z * se)
    moved = abs(cv2_d - center) - abs(cv2_s - center)
    return {
        "n": n, "scheduled_rate": rate_s, "sent_rate": rate_d, "mean_gap_ms": float(due.mean()),
        "rate_shortfall": 1 - rate_d / rate_s,
        "rate_shortfall_allowed": max(RATE_FLOOR, SAMPLING_SHARE * math.sqrt(cv2_s / (n - 1))),
        "scheduled_cv2": cv2_s, "sent_cv2": cv2_d, "law_cv2": center if shape is not None else None,
        "cv2_allowed": half,
        "dispersed": abs(cv2_d - center) > half and moved > DISPERSION_FLOOR,
    }  # fmt: skip


def arrival_reasons(a: dict[str, Any], cpu: str) -> list[str]:
    """Why an open loop's sends are not its named load (rate, dispersion), naming what was delivered."""
    out = []
    if a["rate_shortfall"] > a["rate_shortfall_allowed"]:
        out.append(
            f"arrivals were sent at {a['sent_rate']:.3g}/s, {a['rate_shortfall']:.1%} below the schedule's "
            f"{a['scheduled_rate']:.3g}/s (allowed {a['rate_shortfall_allowed']:.1%}: max(5%, half the sampling "
            f"error of a rate from {a['n']} arrivals)): the client delivered {a['sent_rate']:.3g} req/s{cpu}"
        )
    if a["dispersed"]:
        kind = "burstier" if a["sent_cv2"] > a["scheduled_cv2"] else "more regular"
        law = a["law_cv2"]
        band = (
            f"the named process's {law:.2f}"
            if law is not None
            else f"the schedule's {a['scheduled_cv2']:.2f}"
        )
        out.append(
            f"the sends were {kind} than the named load: gaps' squared CV {a['sent_cv2']:.2f} (the schedule's "
            f"{a['scheduled_cv2']:.2f}), outside {band} +-{a['cv2_allowed']:.2f} (max(0.05, 1.96 standard errors "
            f"from {a['n']} arrivals)): the client delivered {a['sent_rate']:.3g} req/s, not the named "
            f"arrival process{cpu}"
        )
    return out


def starved(cpu_wait_ms: float | None, duration_s: float) -> bool:
    """Whether the client's loop waited for a CPU for at least ``STARVED_SHARE`` of the level."""
    return bool(cpu_wait_ms) and duration_s > 0 and cpu_wait_ms / 1000 >= STARVED_SHARE * duration_s  # type: ignore[operator]


def starvation_note(waits: list[tuple[float | None, float]], url: str) -> str | None:
    """One note for a run whose client was starved of CPU in some level (``waits``: each level's loop
    wait for a CPU, ms, and its duration, s), with the advice to give the client its own CPUs; None when
    no level was. A server on this host (loopback) is named as the likely cause: the tests' and the demo's
    situation, never a GPU deployment's, whose client runs on a host of its own."""
    hit = [(w or 0.0, d) for w, d in waits if starved(w, d)]
    if not hit:
        return None
    host = urlsplit(url).hostname or ""
    local = host in ("localhost", "::1") or host.startswith("127.")
    who = (
        f"the server on this host ({host}) and the client share its CPUs"
        if local
        else "another process held its CPUs"
    )
    return (
        f"the client was starved of CPU in {len(hit)} of {len(waits)} levels (its loop waited "
        f"{sum(w for w, _ in hit) / 1000:,.1f} s for a CPU, at least {STARVED_SHARE:.0%} of each such level): "
        f"{who}; give the client its own CPUs (taskset -c / a cpuset, or the engine at nice 19: serve.nice), "
        "or run it on another host, as a GPU deployment's client is"
    )


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
    gaps = _gaps([r.scheduled_ms for r in records])
    median_gap = float(np.median(gaps)) if len(gaps) else None
    mean_gap = float(gaps.mean()) if len(gaps) else None
    threshold = max(LATENESS_FLOOR_MS, LATENESS_GAPS * (mean_gap or 0.0))
    p99, cap_p99, client_p99 = (float(np.percentile(x, 99)) for x in (late, cap, late - cap))
    cause = None
    if p99 > threshold:
        cause = "max-concurrency" if cap_p99 >= client_p99 else "client"
    return {
        "p50_ms": float(np.percentile(late, 50)), "p99_ms": p99, "max_ms": float(late.max()),
        "cap_wait_ms_p99": cap_p99, "cap_wait_ms_max": float(cap.max()), "client_ms_p99": client_p99,
        "median_interarrival_ms": median_gap, "mean_interarrival_ms": mean_gap, "threshold_ms": threshold,
        "late_requests": int((late > threshold).sum()), "cause": cause,
    }  # fmt: skip


def lateness_reason(late: dict[str, Any], cap: int, cpu_wait_ms: float | None = None) -> str | None:
    """Why a level whose send lateness p99 passed its threshold is invalid, naming the cause (and, where
    the client was late, how long its loop waited for a CPU: a busy host delays the sends)."""
    if late["cause"] is None:
        return None
    gap = late["mean_interarrival_ms"]
    head = (
        f"send lateness p99 {late['p99_ms']:.1f} ms > {late['threshold_ms']:.1f} ms (max(10 ms, one mean "
        f"inter-arrival {gap or 0:.1f} ms)): {late['late_requests']} requests left after their scheduled time"
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
    cpu_wait_ms: float | None = None, shape: float | None = None,
) -> list[str]:  # fmt: skip
    """Every reason the level is invalid (``shape``: :func:`arrivals`'s, the open loop's named law)."""
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
    if closed_loop:
        lags = np.asarray([r.lag_ms for r in records])
        p99_lag = float(np.percentile(lags, 99))
        if p99_lag > load.max_lag_ms:
            reasons.append(
                f"client lag p99 {p99_lag:.1f} ms > {load.max_lag_ms:.0f} ms: the client did not deliver the load"
            )
    else:
        reasons += open_loop_reasons(records, concurrency, cpu_wait_ms, shape)
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


def open_loop_reasons(
    records: list[RequestRecord], cap: int, cpu_wait_ms: float | None, shape: float | None
) -> list[str]:
    """An open loop's arrivals against its schedule (rate, dispersion) and its send lateness."""
    span_s = (max(r.sent_ms for r in records) - min(r.sent_ms for r in records)) / 1000
    cpu = ""
    if cpu_wait_ms:
        cpu = f"; its loop's thread waited {cpu_wait_ms:,.0f} ms in all for a CPU"
        if starved(cpu_wait_ms, span_s):
            cpu += " (starved: another process on this host held the CPUs)"
    a = arrivals(records, shape)
    reasons = arrival_reasons(a, cpu) if a else []
    late = lateness(records)
    why = lateness_reason(late, cap, cpu_wait_ms) if late else None
    return [*reasons, why] if why else reasons


def prompt_mismatches(records: list[RequestRecord]) -> int:
    """Requests whose server-counted prompt differs from what the workload built (flagged, not invalid)."""
    return sum(
        1
        for r in records
        if r.ok
        and r.expected_prompt_tokens is not None
        and r.prompt_tokens not in (None, r.expected_prompt_tokens)
    )
