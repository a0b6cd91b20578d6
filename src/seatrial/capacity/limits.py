"""What set the capacity, in accept's saturation classes, judged where the SLO was first not met: the
lowest probe above the capacity that did not meet the target and whose share of good requests fell
below it (a description of where requests broke, not a verdict: an INCONCLUSIVE probe below it where
every request held, or one of 60 broke, shows no symptom, so the next one up is read), or that shows
KV pressure.

KV_PRESSURE         the failing probe shows preemptions, or KV cache usage at or above ``KV_HIGH``.
QUEUE_SATURATION    it shows requests waiting, and most of its missed requests broke the TTFT bound:
                    requests queued for a slot (the server's batch is full).
THROUGHPUT_PLATEAU  no queue, and most missed requests broke a TPOT or E2E bound: every running request
                    decodes more slowly (decode speed sets the capacity).
SLO_CLIFF           most missed requests broke the TTFT bound with no queue seen (prefill time, or a
                    queue the engine does not export).
CLIENT_BOUND        the search stopped on a probe the client did not deliver (INVALID).
NONE                no probe failed to meet the target (the capacity is at least the highest probe), or none
                    of those not shown to meet it had its share of good requests fall below the target
                    (INCONCLUSIVE: too few requests to tell).
"""

from __future__ import annotations

from seatrial.runs.summaries.capacity import Limit, Probe

KV_HIGH = 0.95


def limit(probes: list[Probe], capacity: float | None, target: float) -> Limit:
    invalid = [p for p in probes if p.verdict == "INVALID"]
    above = sorted(
        (p for p in probes if p.verdict in ("MISSES", "INCONCLUSIVE") and (capacity is None or p.load > capacity)),
        key=lambda p: p.load,
    )
    if not above:
        if invalid:
            p = invalid[0]
            sent = f"the client delivered {p.delivered_rate_req_s:.3g} req/s; " if p.delivered_rate_req_s else ""
            return Limit(classification="CLIENT_BOUND", reason=f"load {p.load:g}: {sent}{'; '.join(p.invalid_reasons)}")
        return Limit(classification="NONE", reason="every probe met the target")
    broken = [p for p in above if _kv_pressed(p) or _fell_short(p, target)]
    if not broken:
        p = above[0]
        return Limit(classification="NONE", reason=f"{_where(p)}: no load above the capacity had its share of good "
                     f"requests fall below {target:.1%}; the search ran out of requests before it could tell the load "
                     "met the target")  # fmt: skip
    p = broken[0]
    srv, missed, where = p.server, p.missed_by, _where(p)
    if _kv_pressed(p):
        return Limit(
            classification="KV_PRESSURE",
            reason=f"{where}: {srv.preemptions or 0:.0f} preemptions, KV usage max {(srv.kv_cache_usage_max or 0):.0%}",
        )
    ttft = missed.get("ttft_ms", 0)
    decode = max(missed.get("tpot_ms", 0), missed.get("e2e_ms", 0))
    queued = (srv.waiting_max or 0) > 0
    broke = f"{ttft} requests broke TTFT, {decode} TPOT/E2E, {missed.get('failed', 0)} failed"
    if ttft >= decode and queued:
        return Limit(classification="QUEUE_SATURATION", reason=f"{where}: up to {srv.waiting_max:.0f} waiting; {broke}")
    if decode > ttft:
        return Limit(classification="THROUGHPUT_PLATEAU", reason=f"{where}: decode speed, no queue seen; {broke}")
    return Limit(classification="SLO_CLIFF", reason=f"{where}: TTFT without a queue the engine shows; {broke}")


def _kv_pressed(p: Probe) -> bool:
    return (p.server.preemptions or 0) > 0 or (p.server.kv_cache_usage_max or 0) >= KV_HIGH


def _fell_short(p: Probe, target: float) -> bool:
    return any(p.missed_by.values()) and p.attainment is not None and p.attainment < target


def _where(p: Probe) -> str:
    return f"at {p.load:g} ({p.verdict}, attainment {_pct(p.attainment)})"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"
