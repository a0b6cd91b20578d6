"""What set the capacity, from synthetic probes: each class from the server view and the bounds broken."""

from __future__ import annotations

from typing import Any

from seatrial.capacity.limits import limit
from seatrial.runs.summaries.base import Distribution
from seatrial.runs.summaries.capacity import Probe, ProbeServer


def probe(load: float, verdict: str, missed: dict[str, int], **server: Any) -> Probe:
    return Probe(rate_req_s=load, requests=100, good=50, attainment=0.5, attainment_ci=[0.4, 0.6], n_eff=100,
                 method="wilson", verdict=verdict, valid=verdict != "INVALID", runs=1, levels=[0],
                 ttft_ms=Distribution(), tpot_ms=Distribution(), e2e_ms=Distribution(), output_tok_s=1.0,
                 achieved_rate_req_s=load, mean_in_flight=1.0, missed_by=missed,
                 server=ProbeServer(**server), invalid_reasons=["client lag"] if verdict == "INVALID" else [])  # fmt: skip


def test_each_class_is_judged_at_the_first_load_that_did_not_meet() -> None:
    met = probe(4, "MEETS", {"failed": 0, "ttft_ms": 1})
    queue = probe(8, "MISSES", {"failed": 0, "ttft_ms": 40, "tpot_ms": 2}, waiting_max=6, running_max=4)
    assert limit([met, queue], 4).classification == "QUEUE_SATURATION"
    kv = probe(8, "MISSES", {"failed": 0, "ttft_ms": 40}, preemptions=3)
    assert limit([met, kv], 4).classification == "KV_PRESSURE"
    decode = probe(8, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 2, "tpot_ms": 30}, waiting_max=0)
    assert limit([met, decode], 4).classification == "THROUGHPUT_PLATEAU"
    cliff = probe(8, "MISSES", {"failed": 0, "ttft_ms": 30}, waiting_max=0)
    assert limit([met, cliff], 4).classification == "SLO_CLIFF"
    higher = probe(16, "MISSES", {"failed": 0, "tpot_ms": 50})
    assert limit([met, queue, higher], 4).classification == "QUEUE_SATURATION"  # the lowest one decides
    assert limit([met], 4).classification == "NONE"
    assert limit([met, probe(8, "INVALID", {"failed": 0})], 4).classification == "CLIENT_BOUND"
