"""What set the capacity, in accept's saturation classes, judged where the SLO was first not met: the
lowest probe that did not meet the target, against the capacity probe below it.

KV_PRESSURE         the failing probe shows preemptions, or KV cache usage at or above ``KV_HIGH``.
QUEUE_SATURATION    it shows requests waiting, and most of its missed requests broke the TTFT bound:
                    requests queued for a slot (the server's batch is full).
THROUGHPUT_PLATEAU  no queue, and most missed requests broke a TPOT or E2E bound: every running request
                    decodes more slowly (decode speed sets the capacity).
SLO_CLIFF           most missed requests broke the TTFT bound with no queue seen (prefill time, or a
                    queue the engine does not export).
CLIENT_BOUND        the search stopped on a probe the client did not deliver (INVALID).
NONE                no probe failed to meet the target (the capacity is at least the highest probe), or the
                    lowest one not shown to meet it had no request break the SLO (INCONCLUSIVE: too few).
"""

from __future__ import annotations

from seatrial.runs.summaries.capacity import Limit, Probe

KV_HIGH = 0.95


def limit(probes: list[Probe], capacity: float | None) -> Limit:
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
    p = above[0]
    srv, missed = p.server, p.missed_by
    where = f"at {p.load:g} ({p.verdict}, attainment {_pct(p.attainment)})"
    if (srv.preemptions or 0) > 0 or (srv.kv_cache_usage_max or 0) >= KV_HIGH:
        return Limit(
            classification="KV_PRESSURE",
            reason=f"{where}: {srv.preemptions or 0:.0f} preemptions, KV usage max {(srv.kv_cache_usage_max or 0):.0%}",
        )
    if not any(missed.values()):
        return Limit(classification="NONE", reason=f"{where}: no request broke the SLO; the search ran out of "
                     "requests before it could tell the load met it")  # fmt: skip
    ttft = missed.get("ttft_ms", 0)
    decode = max(missed.get("tpot_ms", 0), missed.get("e2e_ms", 0))
    queued = (srv.waiting_max or 0) > 0
    broke = f"{ttft} requests broke TTFT, {decode} TPOT/E2E, {missed.get('failed', 0)} failed"
    if ttft >= decode and queued:
        return Limit(classification="QUEUE_SATURATION", reason=f"{where}: up to {srv.waiting_max:.0f} waiting; {broke}")
    if decode > ttft:
        return Limit(classification="THROUGHPUT_PLATEAU", reason=f"{where}: decode speed, no queue seen; {broke}")
    return Limit(classification="SLO_CLIFF", reason=f"{where}: TTFT without a queue the engine shows; {broke}")


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"
