"""A level's window starts where its own data says the steady state began (issue 38 item 2): MSER-5 on
the measured TTFTs in send order, a transient left to the warm-up, a queue that kept growing named
overloaded; through bench against the synthetic M/D/4 server at a load it holds and at twice what it can."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.clirun import invoke
from tests.md4_server import OUT, md4_server

from seatrial.load.records import RequestRecord
from seatrial.load.window import steady_window
from seatrial.runs.folder import read_jsonl
from seatrial.stats.steady import mser5


def test_mser5_finds_a_transient_a_steady_series_and_a_rising_one() -> None:
    rng = np.random.default_rng(4)
    noise = rng.normal(0, 1, 2000)
    settled = mser5(np.concatenate([np.linspace(30, 0, 200), noise]))
    assert 150 <= settled.cut <= 260 and settled.stationary and not settled.rising, settled
    flat = mser5(noise)
    assert flat.cut < 500 and flat.stationary and not flat.rising, flat
    growing = mser5(np.linspace(0, 50, 2000) + noise)  # a queue that keeps growing
    assert growing.stationary is False and growing.rising, growing
    falling = mser5(np.linspace(50, 0, 2000) + noise)  # never settled, but not rising: not overloaded
    assert falling.stationary is False and not falling.rising, falling
    few = mser5(noise[:99])
    assert few.cut == 0 and few.stationary is None


def records(ttfts: list[float]) -> list[RequestRecord]:
    """Sent 10 ms apart, listed in reverse (only an ordering by send time puts them back)."""
    rows = [RequestRecord(f"r{i}", "measure", 1, ttft_ms=t, sent_ms=10.0 * i, output_tokens=4)
            for i, t in enumerate(ttfts)]  # fmt: skip
    return rows[::-1]


def test_a_transient_moves_to_the_warm_up_in_send_order() -> None:
    rng = np.random.default_rng(5)
    ttfts = [500.0 - 10 * i for i in range(40)] + list(100 + rng.normal(0, 5, 260))
    given = records(ttfts)
    given[-3].error, given[-3].ttft_ms = "timeout", None  # r2: failed in the transient, still counted
    whole, none, told = steady_window(given, open_loop=True, cut=False)  # a level that keeps its figures
    assert len(whole) == 300 and none == [] and told.excluded == 0 and told.start_ms is None
    assert 30 <= told.transient <= 50 and "still hold them" in told.reason
    kept, left, window = steady_window(given, open_loop=True, cut=True)
    assert window.transient == window.excluded == told.transient and 30 <= window.excluded <= 50 and len(kept) == 300 - window.excluded == 300 - len(left), window
    assert kept[0].request_id == "r2" and "r2" not in {r.request_id for r in left}
    assert [r.sent_ms for r in kept] == sorted(r.sent_ms for r in kept)
    assert window.start_ms == kept[1].sent_ms and window.stationary and not window.overloaded
    assert "left the first" in window.reason
    # the records before the window are the first sent (by send time, not by list order)
    assert [r.request_id for r in left] == [f"r{i}" for i in range(window.excluded + 1) if i != 2]


def test_few_requests_cut_nothing_and_only_an_open_loop_is_overloaded() -> None:
    kept, _, window = steady_window(records([100.0] * 60), open_loop=True, cut=True)
    assert len(kept) == 60 and window.excluded == 0 and window.stationary is None and "too few" in window.reason
    rising = [float(t) for t in np.linspace(10, 2000, 400)]
    assert steady_window(records(rising), open_loop=True, cut=False)[2].overloaded
    closed = steady_window(records(rising), open_loop=False, cut=False)[2]
    assert closed.stationary is False and not closed.overloaded and "not stationary" in closed.reason




@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    yield from md4_server()


def bench(server: str, rate: float, tmp: Path) -> tuple[dict, list[dict]]:  # type: ignore[type-arg]
    r = invoke(["bench", "--url", server, "--input-len", "8", "--output-len", str(OUT), "--rate", f"{rate:g}",
                "--requests", "200", "--warmup", "10", "--max-lag-ms", "500", "--out", str(tmp / "run"),
                "--json", str(tmp / "b.json")])  # fmt: skip
    assert r.code in (0, 1), r.output
    return json.loads((tmp / "b.json").read_text())["levels"][0], list(read_jsonl(tmp / "run" / "requests.jsonl"))


def test_twice_the_servers_capacity_is_overloaded_and_a_light_load_is_not(server: str, tmp_path: Path) -> None:
    heavy, rows = bench(server, 76.0, tmp_path / "heavy")
    w = heavy["window"]
    assert w["overloaded"] and w["stationary"] is False, w
    assert any("overloaded" in n for n in heavy["notes"]), heavy["notes"]
    # a bench level keeps its figures over all its measured requests, and says what the data called transient
    assert len([x for x in rows if x["phase"] == "measure"]) == 200 == heavy["requests_ok"] + heavy["requests_failed"]
    assert w["excluded"] == 0 and w["start_ms"] is None and w["transient"] > 0, w
    light, _ = bench(server, 8.0, tmp_path / "light")
    assert light["window"]["stationary"] and not light["window"]["overloaded"], light["window"]
    assert light["requests_ok"] + light["requests_failed"] == 200 and light["window"]["excluded"] == 0


def test_a_capacity_probe_cuts_its_transient_and_misses_an_overloaded_rate_at_once(server: str, tmp_path: Path) -> None:
    """Twice what 4 slots serve: the queue grows through the run, the first half of a rising series is
    MSER-5's cut, and the probe MISSES as overloaded after one run; its figures are of the window."""
    r = invoke(["capacity", "--url", server, "--input-len", "8", "--output-len", str(OUT), "--slo", "ttft_ms:100000",
                "--attainment", "0.5", "--start", "76", "--probe-requests", "120", "--max-probes", "1",
                "--max-lag-ms", "500", "--out", str(tmp_path / "cap"), "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert r.code in (0, 1), r.output
    s = json.loads((tmp_path / "c.json").read_text())
    (p,), levels = s["probes"], s["levels"]
    # the run the data calls overloaded ends the probe: the first, unless MSER-5 did not see it rise (its
    # 120 requests were then all good and shorter than 10x what they held in flight: no MEETS, a longer run)
    *before, lv = levels
    w = lv["window"]
    assert p["overloaded"] and p["verdict"] == "MISSES" and p["runs"] == len(levels) <= 2 and w["overloaded"], (p, w)
    assert all(not b["window"]["overloaded"] and b["window"]["short"] for b in before), before
    assert w["excluded"] == w["transient"] > 0 and w["start_ms"] is not None, w
    assert p["requests"] == sum(b["requests_ok"] + b["requests_failed"] for b in levels)
    sent = 120 if not before else None
    rows = [x for x in read_jsonl(tmp_path / "cap" / "requests.jsonl") if x["phase"] == "measure" and x["level"] == lv["index"]]
    assert len(rows) == lv["requests_ok"] + lv["requests_failed"] + w["excluded"] == (sent or len(rows))
    assert sum(x["sent_ms"] < w["start_ms"] for x in rows) == w["excluded"]
