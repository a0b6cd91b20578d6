"""``seatrial bench --workload trace`` and ``--workload sessions`` end to end against the synthetic server,
with one client and with two worker processes (issue 24): every trace line sent once at its time with its
exact prompt length, the level's lateness, schedule and trace figures; conversations whose every turn
carries the conversation so far (the server's real answers) and follows the previous answer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.clirun import invoke
from tests.servers import synthetic_server

from seatrial.runs import read_jsonl
from seatrial.testing.server import ThreadedServer

TRACE = Path(__file__).parent / "data" / "traces" / "mooncake_synthetic_100.jsonl"


server = synthetic_server(itl_s=0.002, ttft_s=0.003, block_size=128)


def _bench(server: ThreadedServer, tmp_path: Path, flags: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    args = ["bench", "--url", server.url, "--max-lag-ms", "1000", "--allow-invalid",
            "--out", str(tmp_path / "run"), "--json", str(tmp_path / "s.json"), *flags]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    assert "Schedule kept (ms)" in result.output  # every level here is an open loop: its table is printed
    summary = json.loads((tmp_path / "s.json").read_text())
    return summary, read_jsonl(tmp_path / "run" / "requests.jsonl")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_trace_is_replayed_line_by_line_at_its_times(server: ThreadedServer, tmp_path: Path, workers: int) -> None:
    flags = ["--workload", "trace", "--trace", str(TRACE), "--trace-format", "mooncake", "--trace-block-tokens", "16",
             "--speedup", "20", "--warmup", "2", "--workers", str(workers)]  # fmt: skip
    summary, rows = _bench(server, tmp_path, flags)
    (level,) = summary["levels"]
    measured = [r for r in rows if r["phase"] == "measure"]
    trace = [orjson.loads(x) for x in TRACE.read_bytes().splitlines()]
    assert sorted(r["trace_line"] for r in measured) == list(range(100))  # every line once
    assert len([r for r in rows if r["phase"] == "warmup"]) == 2
    by_line = {r["trace_line"]: r for r in measured}
    for i, raw in enumerate(trace):
        rec = by_line[i]
        assert rec["error"] is None and rec["prompt_tokens"] == rec["expected_prompt_tokens"]
        assert rec["expected_prompt_tokens"] == max(1, raw["input_length"] * 16 // 512)
        assert rec["output_tokens"] == max(1, raw["output_length"] * 16 // 512)
    # due at the trace's times / 20 from the start; a worker's times come onto the driver's clock through
    # its measured offset, one shift for all of its records (the one turn that follows another, line 61,
    # may have waited for line 57's answer)
    for w in {r["worker"] for r in measured}:
        shifts = [r["scheduled_ms"] - trace[r["trace_line"]]["timestamp"] / 20 for r in measured
                  if r["worker"] == w and r["trace_line"] != 61]  # fmt: skip
        assert max(shifts) - min(shifts) < 0.01 and (w is not None or abs(shifts[0]) < 0.01)
    assert {r["worker"] for r in measured} == ({None} if workers == 1 else {0, 1})
    assert by_line[61]["session"] == by_line[57]["session"] == 0 and by_line[61]["turn"] == 1
    assert by_line[61]["worker"] == by_line[57]["worker"]  # a conversation stays on one worker
    assert by_line[61]["scheduled_ms"] >= by_line[57]["sent_ms"] + by_line[57]["e2e_ms"] - 0.01
    assert level["prompt_token_mismatches"] == 0 and level["requests_ok"] == 100
    assert level["schedule"] == {"arrival": "trace", "burstiness": None, "ramp_up": None, "ramp_up_start": None,
                                 "ramp_up_end": None, "think_time_ms": None}  # fmt: skip
    t = level["trace"]
    assert (t["lines"], t["first_line"], t["speedup"], t["block_tokens"], t["format"]) == (100, 0, 20.0, 16, "mooncake")
    assert t["engine_block_size"] == 128 and t["prefix_hits_allowed"] == 896 + 384 and t["sessions"] == 1
    assert t["span_s"] == pytest.approx(trace[-1]["timestamp"] / 20 / 1000)
    # lateness over every request, from the common start with workers: its figures are the records' own
    late = level["lateness"]
    own = sorted(r["sent_ms"] - r["scheduled_ms"] for r in measured)
    assert late["max_ms"] == pytest.approx(own[-1]) and late["p50_ms"] <= late["p99_ms"] <= late["max_ms"]
    assert late["threshold_ms"] == pytest.approx(max(10.0, late["mean_interarrival_ms"]))
    assert level["delivery"]["scheduled_rate"] > 0 and level["delivery"]["scheduled_cv"] > 0
    assert level["valid"] == (late["p99_ms"] <= late["threshold_ms"] and not level["invalid_reasons"])
    timing = level["client_timing"]  # how long the loops (each worker's) waited for a CPU: Linux says
    waits = [w["cpu_wait_ms"] for w in timing["workers"]]
    assert timing["cpu_wait_ms"] >= 0 and (workers == 1 or timing["cpu_wait_ms"] == pytest.approx(sum(waits)))


@pytest.mark.parametrize("workers", [1, 2])
def test_sessions_carry_the_conversation_and_follow_each_answer(
    server: ThreadedServer, tmp_path: Path, workers: int
) -> None:
    flags = ["--workload", "sessions", "--sessions", "3", "--turns", "3", "--think-time-ms", "20", "--input-len", "8",
             "--output-len", "5", "--warmup", "2", "--workers", str(workers)]  # fmt: skip
    summary, rows = _bench(server, tmp_path, flags)
    assert summary["endpoint"] == "chat"  # chosen for the workload
    (level,) = summary["levels"]
    measured = [r for r in rows if r["phase"] == "measure"]
    assert sorted((r["session"], r["turn"]) for r in measured) == [(s, k) for s in range(3) for k in range(3)]
    for s in range(3):
        turns = sorted((r for r in measured if r["session"] == s), key=lambda r: r["turn"])
        # the synthetic server counts the words of every message: each turn holds the 8-token messages and
        # 5-token answers before it (the answers' real text), and its own message
        assert [r["prompt_tokens"] for r in turns] == [8, 8 + 5 + 8, 8 + 5 + 8 + 5 + 8]
        assert len({r["worker"] for r in turns}) == 1
        for prev, nxt in itertools.pairwise(turns):
            answered = prev["sent_ms"] + prev["e2e_ms"]
            assert nxt["scheduled_ms"] >= answered + 20 - 0.5  # after the answer and 20 ms of thinking
    per_turn = level["sessions"]["per_turn"]
    assert level["sessions"]["sessions"] == 3 and [t["turn"] for t in per_turn] == [0, 1, 2]
    assert all(t["requests_ok"] == 3 and t["ttft_ms"]["p50"] > 0 for t in per_turn)
    assert [t["prompt_tokens_mean"] for t in per_turn] == [8, 21, 34]
    assert level["schedule"]["arrival"] == "sessions" and level["schedule"]["think_time_ms"] == 20
    assert level["lateness"] is not None and level["trace"] is None
    assert "content" not in (tmp_path / "run" / "requests.jsonl").read_text()  # no text written
    report = (tmp_path / "run" / "report.html").read_text()
    assert "Conversations: TTFT per turn" in report and "Schedule kept (ms)" in report


def test_a_ramp_level_and_a_gamma_level_end_to_end(server: ThreadedServer, tmp_path: Path) -> None:
    """A linear ramp from 20 to 80 requests/s over 30 constant-gap arrivals: the gap before request i is
    1 / rate(i) (vLLM's formula); the level says what it was. A gamma level says its burstiness."""
    flags = ["--ramp-up", "linear", "--ramp-up-start", "20", "--ramp-up-end", "80", "--arrival", "constant",
             "--requests", "30", "--warmup", "0", "--input-len", "4", "--output-len", "2"]  # fmt: skip
    summary, rows = _bench(server, tmp_path, flags)
    (level,) = summary["levels"]
    due = sorted(r["scheduled_ms"] for r in rows)
    expect = [1000 / (20 + 60 * i / 29) for i in range(1, 30)]
    assert [b - a for a, b in itertools.pairwise(due)] == pytest.approx(expect, abs=0.01)
    assert level["schedule"]["ramp_up"] == "linear" and level["schedule"]["ramp_up_end"] == 80
    assert level["rate"] == pytest.approx(29 / (sum(expect) / 1000))  # the schedule's mean rate
    summary, _ = _bench(server, tmp_path / "g", ["--rate", "50", "--arrival", "gamma", "--burstiness", "0.5",
                                                 "--requests", "20", "--warmup", "0", "--output-len", "2"])  # fmt: skip
    level = summary["levels"][0]
    assert level["schedule"]["arrival"] == "gamma" and level["schedule"]["burstiness"] == 0.5
    assert level["delivery"]["scheduled_cv"] > 0 and level["lateness"]["max_ms"] >= level["lateness"]["p50_ms"]
