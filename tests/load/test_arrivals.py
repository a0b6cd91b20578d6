"""Arrival shapes and a schedule that is kept (issue 24): gamma gaps of vLLM's burstiness, ramps of rates,
a timed workload's own send times and conversation turns, and the lateness rule (on a fake sender: no
HTTP)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from tests.clirun import invoke
from tests.pooled import sending

from seatrial.load.config import LoadConfig
from seatrial.load.distributed import split
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelLoad, arrival_offsets_s, frozen_heap, gaps_cv, ramp_rate, run_level
from seatrial.load.validity import arrivals, cv2_se, invalid_reasons, lateness, law_cv2
from seatrial.load.workloads import RequestSpec


@pytest.mark.parametrize("k", [0.25, 1.0, 4.0])
def test_gamma_gaps_have_the_asked_rate_and_a_cv_of_one_over_root_k(k: float) -> None:
    offsets = arrival_offsets_s(20_000, rate=50.0, arrival="gamma", seed=3, burstiness=k)
    gaps = np.diff(offsets)
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / k**0.5, rel=0.05)
    assert gaps_cv([t * 1000 for t in offsets]) == pytest.approx(gaps.std(ddof=1) / gaps.mean())


def test_a_ramp_goes_from_its_first_rate_to_its_last() -> None:
    """vLLM's formulas: linear R0 + (R1 - R0) p, exponential R0 (R1/R0)^p, p = i / (n - 1); with constant
    gaps, the gap before request i is exactly 1 / rate(i)."""
    n = 11
    for kind, mid in (("linear", 5.5), ("exponential", 10**0.5)):
        ramp = (kind, 1.0, 10.0)
        assert [ramp_rate(ramp, i, n) for i in (0, 5, 10)] == pytest.approx([1.0, mid, 10.0])
        offsets = arrival_offsets_s(n, 0.0, "constant", 0, ramp=ramp)
        assert np.diff(offsets) == pytest.approx([1 / ramp_rate(ramp, i, n) for i in range(1, n)])
    poisson = np.diff(arrival_offsets_s(4000, 0.0, "poisson", 1, ramp=("linear", 20.0, 20.0)))
    assert poisson.mean() == pytest.approx(1 / 20, rel=0.05)  # a flat ramp is the plain process


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ramp-up", "linear"], "needs --ramp-up-start R0 and --ramp-up-end R1"),
        (["--ramp-up", "linear", "--ramp-up-start", "5", "--ramp-up-end", "2"], "need 0 < R0 <= R1"),
        (["--ramp-up", "linear", "--ramp-up-start", "1", "--ramp-up-end", "2", "--rate", "3"], "leave out --rate"),
        (["--ramp-up-start", "1"], "need --ramp-up linear|exponential"),
        (["--arrival", "gamma", "--rate", "2", "--burstiness", "0"], "burstiness"),
        (["--workload", "trace", "--trace", "x.jsonl"], "needs --trace FILE and --trace-format"),
        (["--workload", "sessions", "--rate", "2"], "sends at its own times: leave out --rate"),
        (["--trace-format", "csv"], "--trace-format: Input should be"),
    ],
)
def test_bad_arrival_and_workload_flags_are_refused(flags: list[str], message: str) -> None:
    result = invoke(["bench", "--url", "http://127.0.0.1:9", *flags])
    assert result.code == 2 and message in result.output, result.output


def _run(specs: list[RequestSpec], load: LevelLoad, hold_s: float) -> tuple[list[RequestRecord], dict[int, float]]:
    ended: dict[int, float] = {}

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        start = time.perf_counter()
        await asyncio.sleep(hold_s)
        rec.output_tokens = spec.output_len
        ended[int(rec.request_id.rsplit("-", 1)[1])] = rec.sent_ms + (time.perf_counter() - start) * 1000
        return rec

    records, _ = asyncio.run(run_level(specs, load, "measure", "t", send, lambda r: None))
    return sorted(records, key=lambda r: r.request_id), ended


def test_a_timed_level_sends_at_its_specs_times_and_a_turn_after_the_answer_and_the_think_time() -> None:
    """Two conversations of three turns (turn k follows turn k-1) and one lone request at 0.12 s; each
    answer takes 50 ms, the think time is 30 ms; conversation 1's first turn is due at 0.02 s."""
    specs = [RequestSpec("p", 2, at_s=0.0, session=0, turn=0), RequestSpec("p", 2, at_s=0.0, after=0, session=0, turn=1),
             RequestSpec("p", 2, at_s=0.0, after=1, session=0, turn=2),
             RequestSpec("p", 2, at_s=0.02, session=1, turn=0), RequestSpec("p", 2, at_s=0.3, after=3, session=1, turn=1),
             RequestSpec("p", 2, at_s=0.0, after=4, session=1, turn=2), RequestSpec("p", 2, at_s=0.12, trace_line=9)]  # fmt: skip
    records, ended = _run(specs, LevelLoad(100, timed=True, think_s=0.03), hold_s=0.05)
    assert [(r.session, r.turn, r.trace_line) for r in records] == [(s.session, s.turn, s.trace_line) for s in specs]
    by = {int(r.request_id[2:]): r for r in records}
    assert by[0].scheduled_ms == 0 and by[3].scheduled_ms == pytest.approx(20, abs=0.01)
    assert by[6].scheduled_ms == pytest.approx(120, abs=0.01)
    for turn, prev in ((1, 0), (2, 1), (5, 4)):  # due once the answer is back, plus 30 ms of thinking
        assert by[turn].scheduled_ms >= ended[prev] + 30
    assert by[4].scheduled_ms == pytest.approx(300, abs=0.01)  # its own time was later than its answer
    assert all(r.sent_ms >= r.scheduled_ms for r in records)


def test_a_session_stays_on_one_worker_and_keeps_its_order() -> None:
    specs = [RequestSpec("p", 1, at_s=0.0, after=None if k == 0 else i - 1, session=s, turn=k)
             for i, (s, k) in enumerate((s, k) for s in range(5) for k in range(3))]  # fmt: skip
    shares = split(specs, LevelLoad(15, timed=True, think_s=0.1), 2, sending())
    assert [sorted({specs[i].session for i in sh.indices}) for sh in shares] == [[0, 2, 4], [1, 3]]
    for sh in shares:
        assert sh.load.timed and sh.load.think_s == 0.1 and sh.load.offsets_s == [0.0] * len(sh.indices)
        # each turn's previous turn is in the same share
        assert all(sp.after is None or sp.after in sh.indices for sp in sh.specs)


def test_an_open_loop_enters_the_sender_at_each_due_time() -> None:
    """Lateness as the sender sees it, not as the scheduler stamps it: a fake sender notes the moment it is
    entered, against the due time the schedule itself gives (start + i / rate of a constant 200/s level of
    100 requests). Catches a late open loop (a 5 ms delay before each send, or a due time shifted so that
    the scheduler's own ``sent_ms - scheduled_ms`` hides it): the median send within 2.5 ms of its due time
    plus the median lateness of the loop's own ticks (a late loop is the host's, a late send with an
    on-time loop is the scheduler's); never early; the records' ``scheduled_ms`` is the schedule, and their
    ``sent_ms`` is the moment the sender was entered."""
    from seatrial.load.looplag import LoopLag

    n, rate = 100, 200.0
    specs = [RequestSpec("p", 1) for _ in range(n)]
    entered: dict[str, int] = {}

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        entered[rec.request_id] = time.perf_counter_ns()
        rec.output_tokens = spec.output_len
        return rec

    async def level() -> tuple[list[RequestRecord], int, LoopLag]:
        lag = LoopLag()
        with frozen_heap():  # its full collection first, before the clock (as bench does)
            async with lag.watching():
                start_ns = time.perf_counter_ns() + 20_000_000
                records, _ = await run_level(specs, LevelLoad(n, rate, "constant"), "measure", "t", send,
                                             lambda r: None, start_ns=start_ns)  # fmt: skip
        return records, start_ns, lag

    records, start_ns, lag = asyncio.run(level())
    due_ms = [off * 1000 for off in arrival_offsets_s(n, rate, "constant", 0)]
    by = {r.request_id: r for r in records}
    late_ms = np.asarray([(entered[f"t-{i:05d}"] - start_ns) / 1e6 - due for i, due in enumerate(due_ms)])
    # the median: a 5 ms delay moves every send, a host stall only some (CI saw p99 11 ms, its loop 6.5 ms)
    host_ms = float(np.median(lag.late_ms)) if lag.late_ms else 0.0
    assert late_ms.min() >= 0 and np.median(late_ms) <= 2.5 + host_ms, (np.percentile(late_ms, [50, 99]), host_ms)
    for i, due in enumerate(due_ms):
        rec = by[f"t-{i:05d}"]
        assert rec.scheduled_ms == pytest.approx(due, abs=0.01)
        assert rec.sent_ms - rec.scheduled_ms == pytest.approx(late_ms[i], abs=0.5)


def _rec(i: int, scheduled: float, sent: float, cap: float = 0.0) -> RequestRecord:
    r = RequestRecord(f"L0-{i:05d}", "measure", 4, expected_output_tokens=1, output_tokens=1)
    r.scheduled_ms, r.sent_ms, r.cap_wait_ms = scheduled, sent, cap
    return r


def test_lateness_is_p50_p99_max_against_max_of_10_ms_and_one_mean_gap() -> None:
    load = LoadConfig(rate=1.0, max_lag_ms=10_000, requests=100)
    on_time = [_rec(i, i * 1000.0, i * 1000.0 + 2.0) for i in range(100)]  # 1 s apart, 2 ms late
    late = lateness(on_time)
    assert late is not None and late["p50_ms"] == pytest.approx(2.0) and late["max_ms"] == pytest.approx(2.0)
    assert late["mean_interarrival_ms"] == 1000.0 and late["threshold_ms"] == 1000.0 and late["cause"] is None
    assert not invalid_reasons(on_time, _delivery(), load, 100, closed_loop=False)
    # 40 ms late at 100 ms apart: under one gap, still valid (the old fixed 10 ms called it invalid);
    # 150 ms late is past one gap: invalid, though rate and dispersion are kept (every send equally late)
    assert not invalid_reasons([_rec(i, i * 100.0, i * 100.0 + 40) for i in range(100)], _delivery(), load, 100, False)
    close = [_rec(i, i * 100.0, i * 100.0 + 150) for i in range(100)]
    reasons = invalid_reasons(close, _delivery(), load, 100, closed_loop=False)
    assert len(reasons) == 1 and reasons[0].startswith("send lateness p99 150.0 ms > 100.0 ms (max(10 ms, one mean")
    assert "the client was late" in reasons[0]
    # 5 ms apart: the 10 ms floor holds
    assert lateness([_rec(i, i * 5.0, i * 5.0 + 1) for i in range(100)])["threshold_ms"] == 10.0  # type: ignore[index]
    assert not invalid_reasons(close, _delivery(), load, 100, closed_loop=True)  # a closed loop has no schedule


def _poisson(n: int, rate: float, seed: int) -> list[float]:
    return [t * 1000 for t in arrival_offsets_s(n, rate, "poisson", seed)]


def test_a_busy_client_s_few_late_sends_keep_the_named_load() -> None:
    """The field case (issue 38 item 8): 3 of 139 Poisson sends at 4/s leave 14-44 ms late; and the CI's:
    at 24/s, 1% of sends 17 ms late. Rate, dispersion and lateness stay within the load's own error."""
    load = LoadConfig(rate=4.0, max_lag_ms=50, requests=139)
    for rate, lates in ((4.0, {10: 14.0, 70: 30.0, 120: 44.0}), (24.0, {5: 16.8, 90: 10.1})):
        due = _poisson(139, rate, seed=7)
        recs = [_rec(i, t, t + 0.5 + lates.get(i, 0.0)) for i, t in enumerate(due)]
        assert not invalid_reasons(recs, _delivery(), load, 1, closed_loop=False, shape=1.0)
        a = arrivals(recs, 1.0)
        assert a is not None and not a["dispersed"] and a["law_cv2"] == 1.0


def test_a_stalled_client_sends_a_burst_and_the_reason_says_what_it_delivered() -> None:
    """At 8/s a 2.6 s stall sends what fell due meanwhile (~21 requests) at its end: burstier than the
    schedule beyond its sampling error, and late; the reason names the delivered rate and the CPU wait."""
    load = LoadConfig(rate=8.0, max_lag_ms=50, requests=139)
    due = _poisson(139, 8.0, seed=3)
    stall = (due[60], due[60] + 2600.0)
    recs = [_rec(i, t, stall[1] if stall[0] <= t < stall[1] else t + 0.5) for i, t in enumerate(due)]
    reasons = invalid_reasons(recs, _delivery(), load, 1, closed_loop=False, cpu_wait_ms=2650.0, shape=1.0)
    burst = next(r for r in reasons if r.startswith("the sends were burstier than the named load"))
    assert "outside the named process's 1.00 +-0.33" in burst
    sent = arrivals(recs)["sent_rate"]  # type: ignore[index]
    assert f"the client delivered {sent:.3g} req/s" in burst and "waited 2,650 ms in all for a CPU (starved" in burst
    assert any(r.startswith("send lateness p99") for r in reasons)


def test_a_client_that_falls_behind_delivers_a_lower_rate_judged_by_its_sampling_error() -> None:
    load = LoadConfig(rate=10.0, max_lag_ms=50, requests=400)
    due = _poisson(400, 10.0, seed=5)
    slow = [_rec(i, t, t * 1.25) for i, t in enumerate(due)]  # sends spread over 1.25x the time: 20% short
    reasons = invalid_reasons(slow, _delivery(), load, 1, closed_loop=False)
    a = arrivals(slow)
    assert a is not None and a["rate_shortfall"] == pytest.approx(0.2, abs=1e-9)
    assert any("20.0% below the schedule's" in r and f"delivered {a['sent_rate']:.3g} req/s" in r for r in reasons)
    # 8% short: beyond 5% but within half the sampling error of 10 arrivals (cv / sqrt(9) / 2 ~ 17%)
    few = [_rec(i, t, t * 1.087) for i, t in enumerate(_poisson(10, 10.0, seed=5))]
    assert arrivals(few)["rate_shortfall_allowed"] > 0.08  # type: ignore[index]
    assert not [r for r in invalid_reasons(few, _delivery(), load, 1, False) if "below the schedule" in r]
    constant = [_rec(i, i * 100.0, i * 108.7) for i in range(10)]  # no sampling error: the 5% floor
    assert arrivals(constant)["rate_shortfall_allowed"] == 0.05  # type: ignore[index]
    assert [r for r in invalid_reasons(constant, _delivery(), load, 1, False) if "below the schedule" in r]


def test_dispersion_is_judged_against_the_named_law_so_jitter_on_poisson_is_not_a_distortion() -> None:
    """Independent jitter of up to 40 ms at 40 ms gaps: a Poisson load stays Poisson (points displaced
    independently), within the law's band; the same jitter on constant arrivals makes them a different
    process (CV^2 0 -> ~0.17). A schedule that lies outside the band by chance is not the client's
    doing: sent as drawn, it is valid."""
    rng = np.random.default_rng(4)
    due = _poisson(400, 25.0, seed=9)
    jitter = rng.uniform(0, 40.0, 400)  # sd ~11.5 ms on each send
    poisson = [_rec(i, t, t + j) for i, (t, j) in enumerate(zip(due, jitter, strict=True))]
    a = arrivals(poisson, 1.0)
    assert a is not None and abs(a["sent_cv2"] - 1) < a["cv2_allowed"] and not a["dispersed"]
    constant = [_rec(i, i * 40.0, i * 40.0 + j) for i, j in enumerate(jitter)]
    c = arrivals(constant, float("inf"))
    assert c is not None and c["law_cv2"] == 0.0 and c["cv2_allowed"] == 0.05 and c["dispersed"]
    load = LoadConfig(rate=25.0, arrival="constant", max_lag_ms=50, requests=400)
    reasons = invalid_reasons(constant, _delivery(), load, 1, closed_loop=False, shape=float("inf"))
    assert any(r.startswith("the sends were burstier than the named load") for r in reasons), reasons
    bursty = [t * 1000 for t in arrival_offsets_s(139, 4.0, "gamma", seed=2, burstiness=0.25)]  # CV^2 4
    drawn = [_rec(i, t, t + 0.5) for i, t in enumerate(bursty)]
    assert not arrivals(drawn, 1.0)["dispersed"]  # type: ignore[index]  # far from Poisson, but as drawn


def test_the_squared_cv_s_standard_error_is_the_delta_method_s() -> None:
    gaps = np.random.default_rng(1).exponential(1.0, 200_000)
    assert cv2_se(gaps) * np.sqrt(len(gaps)) == pytest.approx(2.0, rel=0.03)  # exponential: 2 / sqrt(n)
    assert cv2_se(np.full(100, 5.0)) == 0.0
    for k in (0.5, 1.0, 4.0):  # the law's own: gamma of shape k, against the delta method on many gaps
        g = np.random.default_rng(3).gamma(k, 1.0, 200_000)
        assert law_cv2(k, 200_000)[1] == pytest.approx(cv2_se(g), rel=0.1) and law_cv2(k, 10)[0] == 1 / k
    # its coverage: the squared CV of 139 exponential gaps falls within 1.96 SE of 1 about 95% of the time
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(2000):
        g = rng.exponential(1.0, 139)
        hits += abs(g.var(ddof=1) / g.mean() ** 2 - 1) <= 1.96 * cv2_se(g)
    assert 0.85 <= hits / 2000 <= 0.97


def test_lateness_from_the_max_concurrency_cap_is_reported_as_the_cap_s() -> None:
    load = LoadConfig(rate=10.0, max_concurrency=2, max_lag_ms=10_000, requests=100)
    held = [_rec(i, i * 100.0, i * 100.0 + 180.0 + 1.0, cap=180.0) for i in range(100)]
    late = lateness(held)
    assert late is not None and late["cause"] == "max-concurrency" and late["cap_wait_ms_p99"] == 180.0
    assert late["client_ms_p99"] == pytest.approx(1.0) and late["late_requests"] == 100
    (reason,) = invalid_reasons(held, _delivery(), load, 2, closed_loop=False)
    assert "caused by --max-concurrency 2: they waited for a free slot (p99 180.0 ms)" in reason


def _delivery():  # type: ignore[no-untyped-def]
    from seatrial.load.scheduler import Delivery

    return Delivery()


def test_a_real_open_loop_on_the_fake_sender_keeps_its_schedule() -> None:
    """An uncapped constant 100/s level of 50 requests: sent on time (lateness p99 far below 10 ms on an
    idle loop; the figure itself is the benchmark's, benchmarks/replay_fidelity.py)."""
    specs = [RequestSpec("p", 1) for _ in range(50)]
    t = time.perf_counter()
    records, _ = _run(specs, LevelLoad(50, 100.0, "constant"), hold_s=0.01)
    assert time.perf_counter() - t >= 0.49
    late = lateness(records)
    assert late is not None and late["median_interarrival_ms"] == pytest.approx(10.0)
    assert late["p50_ms"] >= 0 and late["cap_wait_ms_max"] == 0.0
