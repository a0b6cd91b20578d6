"""``bench --goodput`` and ``seatrial capacity`` through the CLI against the synthetic server with a known
service law: ``slots`` requests served at once, the rest waiting first come first served, each taking
TTFT then one token per ITL (an M/D/s queue under Poisson arrivals)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.md4_server import OUT, md4_server

from seatrial.load.goodput import is_good, parse_slo
from seatrial.load.records import RequestRecord
from seatrial.runs.folder import read_jsonl
from seatrial.stats.proportions import wilson


def test_slo_specs_and_what_counts_as_good() -> None:
    assert parse_slo("ttft_ms:2000,tpot_ms:50") == {"ttft_ms": 2000.0, "tpot_ms": 50.0}
    for bad, why in (("ttft:1", "unknown SLO metric"), ("ttft_ms:x", "not a number"), ("ttft_ms:-1", "positive")):
        with pytest.raises(ValueError, match=why):
            parse_slo(bad)
    slo = {"ttft_ms": 100.0, "tpot_ms": 10.0}
    rec = RequestRecord("a", "measure", 1, output_tokens=5, ttft_ms=90.0, last_token_ms=120.0)
    assert is_good(rec, slo)  # TPOT (120 - 90) / 4 = 7.5
    assert not is_good(RequestRecord("b", "measure", 1, output_tokens=5, ttft_ms=90.0, last_token_ms=200.0), slo)
    one = RequestRecord("c", "measure", 1, output_tokens=1, ttft_ms=90.0, last_token_ms=90.0)
    assert is_good(one, slo)  # a single token has no TPOT: it meets the bound, as vLLM counts it
    assert not is_good(RequestRecord("d", "measure", 1, ttft_ms=1.0, error="HTTP 500"), slo)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    yield from md4_server()


def test_bench_goodput_counts_the_requests_that_met_every_bound(server: str, tmp_path: Path) -> None:
    r = invoke(["bench", "--url", server, "--input-len", "8", "--output-len", str(OUT), "--concurrency", "8",
                "--requests", "40", "--warmup", "0", "--slo", "ttft_ms:60,tpot_ms:50", "--max-lag-ms", "500",
                "--out", str(tmp_path / "run"), "--json", str(tmp_path / "b.json")])  # fmt: skip
    assert r.code == 0, r.output
    level = json.loads((tmp_path / "b.json").read_text())["levels"][0]
    g = level["goodput"]
    rows = [RequestRecord.from_json(x) for x in read_jsonl(tmp_path / "run" / "requests.jsonl")]
    good = sum(is_good(x, g["slo"]) for x in rows if x.phase == "measure")
    assert g["good"] == good and g["total"] == 40 and g["attainment"] == pytest.approx(good / 40)
    lo, hi = g["attainment_ci"]
    # 8 users in flight share the server: batches of consecutive requests, never the plain Wilson interval
    plain = wilson(good, 40)
    assert lo <= g["attainment"] <= hi and g["method"] != "wilson" and hi - lo > plain[1] - plain[0], g
    assert g["goodput_req_s"] == pytest.approx(good / level["duration_s"])
    # 8 users on 4 slots: after the first wave every request waits a whole request (~105 ms) for a slot
    assert 0 < g["attainment"] <= 0.5
    assert invoke(["bench", "--url", server, "--goodput", "ttft:5"]).code == 2


def test_capacity_finds_a_lower_bound_with_every_probe_judged_by_its_interval(server: str, tmp_path: Path) -> None:
    out = tmp_path / "cap"
    r = invoke(["capacity", "--url", server, "--input-len", "8", "--output-len", str(OUT), "--slo", "ttft_ms:60",
                "--attainment", "0.8", "--start", "8", "--precision", "0.3", "--probe-requests", "40",
                "--max-probe-requests", "80", "--max-lag-ms", "500",
                "--gpus", "2", "--gpu-hour-usd", "3", "--target-rate", "50", "--out", str(out),
                "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert r.code == 0, r.output
    s = json.loads((tmp_path / "c.json").read_text())
    cap, probes = s["capacity"], s["probes"]
    assert cap["found"] and cap["mode"] == "rate" and cap["attainment_target"] == 0.8
    for p in probes:  # each verdict is what its interval says
        lo, hi = p["attainment_ci"]
        want = "MEETS" if lo >= 0.8 else "MISSES" if hi < 0.8 else "INCONCLUSIVE"
        assert p["verdict"] in (want, "INVALID"), p
    met = [p["rate_req_s"] for p in probes if p["verdict"] == "MEETS"]
    assert cap["rate_req_s"] == max(x for x in met if x < (cap["upper_rate_req_s"] or 1e9))
    assert cap["upper_rate_req_s"] is None or cap["upper_rate_req_s"] > cap["rate_req_s"]
    missed = [p["rate_req_s"] for p in probes if p["verdict"] == "MISSES"]
    assert cap["first_failing_rate_req_s"] == (min(missed) if missed else None)
    assert cap["rate_req_s"] < 4 / 0.105  # never above what 4 slots can serve at all
    assert s["per_gpu"]["req_s"] == pytest.approx(cap["rate_req_s"] / 2)
    tok = cap["output_tok_s"]
    assert s["cost"]["usd_per_1m_output_tokens"] == pytest.approx(2 * 3 / (tok * 3600) * 1e6)
    assert s["profile"]["replicas"] == -(-50 // cap["rate_req_s"]) and s["profile"]["gpus"] == 2 * s["profile"]["replicas"]
    assert s["limit"]["classification"] in ("QUEUE_SATURATION", "SLO_CLIFF", "NONE")
    # every probe's runs are levels of the run folder, their requests in requests.jsonl
    levels = {lv["index"] for lv in s["levels"]}
    assert {i for p in probes for i in p["levels"]} == levels
    rows = read_jsonl(out / "requests.jsonl")
    assert {r["request_id"].split("-")[0] for r in rows if r["phase"] == "measure"} == {f"L{i}" for i in levels}
    assert all(r["request_id"].startswith(f"L{r['level']}-") for r in rows)  # each row carries its level
    page = (out / "report.html").read_text()
    assert "Production profile" in page and "SLO attainment against load" in page and "<svg" in page


def test_capacity_exit_codes(server: str, tmp_path: Path) -> None:
    impossible = invoke(["capacity", "--url", server, "--input-len", "8", "--output-len", "4", "--slo",
                         "ttft_ms:1", "--attainment", "0.8", "--mode", "concurrency", "--probe-requests", "20",
                         "--max-lag-ms", "500", "--json", str(tmp_path / "x.json")])  # fmt: skip
    assert impossible.code == 1, impossible.output
    s = json.loads((tmp_path / "x.json").read_text())
    assert not s["capacity"]["found"] and [p["concurrency"] for p in s["probes"]] == [1]  # one user is the floor
    assert s["probes"][0]["verdict"] == "MISSES" and "no probe met" in s["capacity"]["stop_reason"]
    assert invoke(["capacity", "--url", server, "--slo", "ttft_ms:1", "--attainment", "1.5"]).code == 2
    assert invoke(["capacity", "--url", server]).code == 2  # --slo is required


def test_a_floor_and_a_time_budget_end_the_search_with_what_it_knows(server: str, tmp_path: Path) -> None:
    """--min-rate: no probe meets an impossible SLO, the search stops at the floor ("below 8 req/s"),
    never halving on; --time-budget: the first probe (30 arrivals at 8/s, 3.75 s; every request good against
    a target of 0.5: it meets at once) fits 5 s, the next at
    16/s (1.9 s more) does not: the search ends with its bracket, exit 1."""
    args = ["capacity", "--url", server, "--input-len", "8", "--output-len", "4", "--probe-requests", "24"]
    low = invoke([*args, "--slo", "ttft_ms:1", "--start", "16", "--min-rate", "8", "--json", str(tmp_path / "f.json")])
    assert low.code == 1, low.output
    s = json.loads((tmp_path / "f.json").read_text())
    assert [p["rate_req_s"] for p in s["probes"]] == [16, 8] and s["capacity"]["ended_early"] == "floor"
    assert s["capacity"]["stop_reason"].endswith("below 8 req/s") and "below it" in low.output
    timed = invoke([*args, "--slo", "ttft_ms:5000", "--attainment", "0.5", "--start", "8", "--time-budget", "5s",
                    "--json", str(tmp_path / "t.json")])  # fmt: skip
    assert timed.code == 1, timed.output
    cap = json.loads((tmp_path / "t.json").read_text())["capacity"]
    # the probe at 16/s may fit the budget too on a quick host: the search then ends after it
    assert cap["ended_early"] == "budget" and cap["found"] and cap["rate_req_s"] in (8, 16)
    assert f"the time budget (0.0833 min) was spent: at least {cap['rate_req_s']:g} req/s after" in cap["stop_reason"]
    assert cap["upper_rate_req_s"] is None and "(the time budget ended the search above it)" in timed.output
    assert invoke([*args, "--slo", "ttft_ms:1", "--min-concurrency", "2"]).code == 2  # a rate search has no users
    assert invoke([*args, "--slo", "ttft_ms:1", "--time-budget", "soon"]).code == 2
