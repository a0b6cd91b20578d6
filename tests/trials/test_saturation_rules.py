"""Saturation classes, max concurrencies and the saturation verdict on synthetic ladders."""

from __future__ import annotations

from typing import Any

from seatrial.runs.verdicts import Verdict
from seatrial.trials.configs import Slo
from seatrial.trials.saturation import ladder, verdict
from seatrial.trials.saturation_rules import SaturationConfig, Step, classify, max_executable, max_slo

CFG = SaturationConfig()
SLO = Slo(ttft_ms=2000, percentile=99)


def step(c: int, tok_s: float, running: float, waiting: float, ttft: float = 500.0, **kw: Any) -> Step:
    base: dict[str, Any] = {
        "concurrency": c,
        "requests": 400,
        "requests_failed": 0,
        "output_tok_s": tok_s,
        "ttft_ms_p99": ttft,
        "ttft_ms_slo": ttft,
        "ttft_ms_slo_low": None if ttft is None else ttft * 0.9,
        "ttft_ms_slo_high": None if ttft is None else ttft * 1.1,
        "itl_ms_slo": 20.0,
        "running_max": running,
        "waiting_max": waiting,
        "kv_cache_usage_max": 0.3,
        "preemptions": 0.0,
        "delivered": True,
        "enough_samples": True,
    }
    return Step(**(base | kw))


def test_seed_004_queue_growth_is_queue_saturation() -> None:
    # seed 004 §12: C512 19,500 tok/s waiting 100; C768 19,700 waiting 370; C1024 19,650 waiting 620
    steps = [
        step(256, 15000, 256, 0),
        step(512, 19500, 380, 100),
        step(768, 19700, 380, 370),
        step(1024, 19650, 380, 620),
    ]
    cls, why = classify(steps, CFG, SLO)
    assert cls == "QUEUE_SATURATION"
    assert "C=512->768" in why and "waiting 100->370" in why


def test_flat_throughput_without_queue_is_a_plateau() -> None:
    steps = [step(64, 1000, 64, 0), step(128, 1800, 128, 0), step(192, 1850, 192, 0)]
    cls, why = classify(steps, CFG, SLO)
    assert cls == "THROUGHPUT_PLATEAU" and why.startswith("C=192")


def test_waiting_that_grows_while_running_grows_is_not_queue_saturation() -> None:
    steps = [step(64, 1000, 40, 10), step(128, 2000, 100, 20), step(192, 3000, 160, 30)]
    assert classify(steps, CFG, SLO)[0] == "NONE"


def test_preemptions_or_full_kv_are_kv_pressure_before_any_queue() -> None:
    steps = [step(64, 1000, 64, 0), step(128, 1000, 64, 64, preemptions=12.0)]
    assert classify(steps, CFG, SLO)[0] == "KV_PRESSURE"
    steps = [step(64, 1000, 64, 0, kv_cache_usage_max=0.97)]
    assert classify(steps, CFG, SLO)[0] == "KV_PRESSURE"


def test_ttft_jump_past_the_slo_with_growing_throughput_is_slo_cliff() -> None:
    # seed 001: TTFT 2.05 s -> 20.4 s; here throughput still grows and nothing queues
    steps = [
        step(32, 1000, 32, 0, ttft=1000),
        step(64, 1700, 64, 0, ttft=2050),
        step(128, 2400, 128, 0, ttft=20400),
    ]
    cls, why = classify(steps, CFG, SLO)
    assert cls == "SLO_CLIFF" and "2,050->20,400" in why
    assert max_slo(steps, SLO) == 32 and max_executable(steps) == 128


def test_undelivered_step_is_client_bound_when_nothing_else_showed() -> None:
    steps = [step(64, 1000, 64, 0), step(128, 1900, 120, 0, delivered=False)]
    assert classify(steps, CFG, SLO)[0] == "CLIENT_BOUND"
    # a class found on delivered steps still stands
    steps = [step(64, 1000, 64, 0), step(128, 1010, 64, 60), step(256, 900, 64, 0, delivered=False)]
    assert classify(steps, CFG, SLO)[0] == "QUEUE_SATURATION"


def test_max_executable_and_max_slo_are_separate() -> None:
    steps = [
        step(64, 1000, 64, 0, ttft=800),
        step(128, 1500, 100, 28, ttft=2500),
        step(256, 1500, 100, 156, ttft=9000),
        step(512, 1400, 100, 400, ttft=20000, requests_failed=3),
    ]
    assert max_executable(steps) == 256 and max_slo(steps, SLO) == 64
    v, reasons = verdict(steps, "QUEUE_SATURATION", CFG, SLO)
    assert v is Verdict.PASS and "C=64" in reasons[0]
    v, reasons = verdict(steps, "QUEUE_SATURATION", CFG.model_copy(update={"target_concurrency": 128}), SLO)
    assert v is Verdict.FAIL and "128" in reasons[0]


def test_verdict_inconclusive_on_small_samples_or_client_bound() -> None:
    steps = [step(64, 1000, 64, 0), step(128, 1000, 64, 64, enough_samples=False, requests=50)]
    v, reasons = verdict(steps, "QUEUE_SATURATION", CFG, SLO)
    assert v is Verdict.INCONCLUSIVE and "[128]" in reasons[0] and "1000" in reasons[0]
    v, _ = verdict([step(64, 1000, 64, 0)], "CLIENT_BOUND", CFG, SLO)
    assert v is Verdict.INCONCLUSIVE


def test_no_step_within_slo_fails() -> None:
    v, reasons = verdict([step(64, 1000, 64, 0, ttft=5000)], "NONE", CFG, SLO)
    assert v is Verdict.FAIL and "no step met the SLO" in reasons[0]


def test_ladder_extends_past_its_rungs_up_to_the_cap() -> None:
    cfg = SaturationConfig(ladder=[2, 4], extend_factor=1.5, max_concurrency=10)
    assert list(ladder(cfg)) == [2, 4, 6, 9]
    assert list(ladder(SaturationConfig(max_concurrency=300)))[-1] == 256


def test_failures_at_the_first_step_fail_but_later_ones_only_bound_execution() -> None:
    v, reasons = verdict(
        [step(64, 0, 0, 0, requests_failed=400, ttft=None, enough_samples=False)], "NONE", CFG, SLO
    )
    assert v is Verdict.FAIL and reasons == ["C=64: 400 of 400 requests failed"]
    steps = [step(64, 1000, 64, 0), step(128, 900, 64, 64, requests_failed=5)]
    assert verdict(steps, "QUEUE_SATURATION", CFG, SLO)[0] is Verdict.PASS and max_executable(steps) == 64


def test_slo_compliance_reads_the_interval_not_the_point() -> None:
    """Issue 16 item 5: a point estimate under the SLO whose interval reaches over it proves nothing."""
    straddle = step(128, 1500, 128, 0, ttft=1900, ttft_ms_slo_low=1500.0, ttft_ms_slo_high=2300.0)
    steps = [step(64, 1000, 64, 0, ttft=800), straddle]
    assert max_slo(steps, SLO) == 64
    v, reasons = verdict(steps, "NONE", CFG, SLO)
    assert v is Verdict.INCONCLUSIVE and "C=128" in reasons[0] and "straddles the SLO 2,000 ms" in reasons[0]
    # an upper bound the sample cannot give (too few requests beyond p99) is no proof either
    unknown = step(64, 1000, 64, 0, ttft=800, ttft_ms_slo_high=None)
    v, reasons = verdict([unknown], "NONE", CFG, SLO)
    assert v is Verdict.INCONCLUSIVE and "unknown" in reasons[0]
    # a clear miss above a clear pass bounds the claim, and a target below it still passes
    miss = step(128, 1500, 128, 0, ttft=3000, ttft_ms_slo_low=2600.0)
    v, reasons = verdict([step(64, 1000, 64, 0, ttft=800), miss], "NONE", CFG, SLO)
    assert v is Verdict.PASS and "C=64" in reasons[0]
    cfg = CFG.model_copy(update={"target_concurrency": 64})
    assert verdict(steps, "NONE", cfg, SLO)[0] is Verdict.PASS
