"""What set the capacity, from synthetic probes: each class from the server view and the bounds broken."""

from __future__ import annotations

from typing import Any

from seatrial.capacity.limits import limit
from seatrial.capacity.run import invalid_stop
from seatrial.load.validity import starvation_note
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
    assert limit([met, queue], 4, 0.8).classification == "QUEUE_SATURATION"
    kv = probe(8, "MISSES", {"failed": 0, "ttft_ms": 40}, preemptions=3)
    assert limit([met, kv], 4, 0.8).classification == "KV_PRESSURE"
    decode = probe(8, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 2, "tpot_ms": 30}, waiting_max=0)
    assert limit([met, decode], 4, 0.8).classification == "THROUGHPUT_PLATEAU"
    cliff = probe(8, "MISSES", {"failed": 0, "ttft_ms": 30}, waiting_max=0)
    assert limit([met, cliff], 4, 0.8).classification == "SLO_CLIFF"
    higher = probe(16, "MISSES", {"failed": 0, "tpot_ms": 50})
    assert limit([met, queue, higher], 4, 0.8).classification == "QUEUE_SATURATION"  # the lowest one decides
    assert limit([met], 4, 0.8).classification == "NONE"
    assert limit([met, probe(8, "INVALID", {"failed": 0})], 4, 0.8).classification == "CLIENT_BOUND"


def test_a_search_stopped_by_the_client_says_which_load_it_delivered_and_what_it_knows() -> None:
    bad = probe(16, "INVALID", {"failed": 0}).model_copy(update={"delivered_rate_req_s": 12.34})
    why = invalid_stop(bad, 8.0, rate=True)
    assert why.startswith("the probe at 16 was INVALID twice: the client delivered 12.3 req/s of the 16 asked; "
                          "the capacity is at least 8 req/s; client lag")  # fmt: skip
    assert "no lower load met" in invalid_stop(bad, None, rate=True)
    assert "delivered" not in invalid_stop(bad, 2.0, rate=False)  # a closed loop has no rate to name
    assert "the client delivered 12.3 req/s" in limit([bad], None, 0.8).reason


def test_a_starved_client_is_said_once_with_the_advice_to_give_it_its_own_cpus() -> None:
    # 3 of 4 levels: the loop waited 2.6 s of 30 s (8.7%), 0.9 s of 10 s, 0.1 s of 10 s (under 5%), none
    waits = [(2600.0, 30.0), (900.0, 10.0), (100.0, 10.0), (None, 10.0)]
    note = starvation_note(waits, "http://127.0.0.1:8000")
    assert note is not None and note.startswith("the client was starved of CPU in 2 of 4 levels (its loop waited 3.5 s")
    assert "the server on this host (127.0.0.1)" in note and "give the client its own CPUs" in note
    assert "another process" in (starvation_note(waits, "http://gpu-node:8000") or "")
    assert starvation_note([(100.0, 10.0), (None, 5.0)], "http://127.0.0.1:8000") is None


def test_an_inconclusive_probe_where_no_request_broke_the_slo_names_no_symptom() -> None:
    """A search out of requests at a load where every request held the SLO has found no limit: calling it an
    SLO cliff sent the trial's diagnosis after a TTFT that was never high."""
    met = probe(4, "MEETS", {"failed": 0, "ttft_ms": 0})
    unsure = probe(8, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 0, "tpot_ms": 0}, waiting_max=0)
    got = limit([met, unsure], 4, 0.8)
    assert got.classification == "NONE" and "fall below 80.0%" in got.reason
    assert limit([met, probe(8, "INCONCLUSIVE", {"failed": 1})], 4, 0.8).classification == "SLO_CLIFF"


def test_the_symptom_is_read_at_the_lowest_load_above_capacity_where_requests_broke_the_slo() -> None:
    """A CPU search (vLLM, 4 slots) met at 4.4 req/s, ran out of requests at 6.6 and 8.9 where every request
    held, and saw 44 of 60 break TTFT with 4 waiting at 17.7: that queue is what set the capacity (it said
    NONE, as if nothing had been seen)."""
    met = probe(4.4, "MEETS", {"failed": 0, "ttft_ms": 0})
    held = [probe(x, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 0}, waiting_max=1) for x in (6.6, 8.9)]
    queue = probe(17.7, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 44}, waiting_max=4, running_max=4)
    got = limit([queue, held[1], met, held[0]], 4.4, 0.8)
    assert got.classification == "QUEUE_SATURATION" and got.reason.startswith("at 17.7 (INCONCLUSIVE"), got
    # one TTFT of 60 over the bound (98.3% good at a 0.8 target) is not where the SLO broke (it said SLO_CLIFF)
    one = probe(7.4, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 1}, waiting_max=0).model_copy(update={"attainment": 0.983})
    assert limit([met, one, queue], 4.4, 0.8).classification == "QUEUE_SATURATION"
    assert limit([met, one], 4.4, 0.8).classification == "NONE"
    kv = probe(8.9, "INCONCLUSIVE", {"failed": 0, "ttft_ms": 0}, kv_cache_usage_max=0.97)
    assert limit([met, held[0], kv, queue], 4.4, 0.8).classification == "KV_PRESSURE"  # full KV is a symptom itself
    assert limit([met, queue], 17.7, 0.8).classification == "NONE"  # nothing above the capacity broke
