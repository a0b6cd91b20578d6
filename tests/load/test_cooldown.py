"""A level's load runs past its measured requests (issue 38 item 1): the cool-down keeps the users sending
and the arrivals coming while the last measured requests finish, is cancelled once they are done, and is
never measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.benchrun import bench_into
from tests.pooled import sending

from seatrial.load.config import BenchConfig
from seatrial.load.distributed import split
from seatrial.load.scheduler import LevelLoad, cooldown_count
from seatrial.load.workloads import RequestSpec
from seatrial.runs.folder import read_jsonl
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def bench(url: str, out: Path, **load: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cfg = BenchConfig.model_validate(
        {
            "target": {"url": url},
            "workload": {"name": "random", "input_len": 8, "output_len": 8},
            "load": {"requests": 16, "warmup": 0, "max_lag_ms": 500, **load},
        }
    )
    return bench_into(cfg, out), read_jsonl(out / "requests.jsonl")


def company_ms(rows: list[dict[str, Any]], last: dict[str, Any]) -> float:
    """Request-milliseconds of other requests (any phase) in flight during ``last``'s life: what it ran beside."""
    a, b = last["sent_ms"], last["sent_ms"] + last["e2e_ms"]
    return sum(max(0.0, min(b, r["sent_ms"] + (r["e2e_ms"] or 1e12)) - max(a, r["sent_ms"]))
               for r in rows if r["request_id"] != last["request_id"])  # fmt: skip


def test_a_closed_loops_last_measured_requests_run_under_its_users(tmp_path: Path) -> None:
    # 4 users, 15 requests of ~8 x 10 ms: as the level ends its last measured requests have no measured
    # request left to follow them, so without the cool-down they finish on a draining server; with it the
    # users that are done send cool-down requests beside the last measured one
    with ThreadedServer(SyntheticConfig(itl_s=0.01)) as srv:
        summary, rows = bench(srv.url, tmp_path, concurrency=[4], requests=15)
    level = summary["levels"][0]
    measured = [r for r in rows if r["phase"] == "measure"]
    cooling = [r for r in rows if r["phase"] == "cooldown"]
    assert level["requests_ok"] == 15 and len(measured) == 15 and level["valid"], level["invalid_reasons"]
    assert 1 <= len(cooling) <= cooldown_count(LevelLoad(4), 15)
    # (its time beside others, not a count at its last instant: a client loop late on a busy host may see the
    # cool-down's answers after the last measured one, and then sends no more, as it should)
    last = max(measured, key=lambda r: r["sent_ms"] + r["e2e_ms"])
    assert company_ms(rows, last) > company_ms(measured, last), cooling
    # no cool-down request is sent once the measured requests are done; those sent finish, never measured
    assert all(r["error"] is None for r in cooling)
    assert level["output_tokens"] == 15 * 8


def test_an_open_loops_arrivals_go_on_past_its_last_measured_send(tmp_path: Path) -> None:
    # 80 req/s, each request ~8 x 20 ms: ~13 in flight; arrivals keep coming until the last measured one
    # ends (at 40 req/s none came in that ~150 ms once in CI: a Poisson chance of e^-6; at 80, e^-12)
    with ThreadedServer(SyntheticConfig(itl_s=0.02)) as srv:
        summary, rows = bench(srv.url, tmp_path, concurrency=[1], rate=80.0, requests=40)
    level = summary["levels"][0]
    measured = [r for r in rows if r["phase"] == "measure"]
    cooling = [r for r in rows if r["phase"] == "cooldown"]
    assert level["requests_ok"] == 40 and len(measured) == 40
    last_sent = max(r["sent_ms"] for r in measured)
    end = max(r["sent_ms"] + r["e2e_ms"] for r in measured)
    assert cooling and all(last_sent < r["sent_ms"] < end for r in cooling), (last_sent, end, cooling)
    assert len(cooling) <= cooldown_count(LevelLoad(40, rate=80.0), 40)


def test_each_worker_gets_its_share_of_a_closed_loops_cool_down() -> None:
    specs = [RequestSpec(prompt="a b", output_len=2) for _ in range(16 + 8)]
    shares = split(specs, LevelLoad(4, cool_from=16), 2, sending())
    assert [[i for i in s.indices if i < 16] for s in shares] == [list(range(8)), list(range(8, 16))]
    assert [[i for i in s.indices if i >= 16] for s in shares] == [list(range(16, 20)), list(range(20, 24))]
    assert all(s.load.cool_from == 16 for s in shares)


def test_no_cool_down_for_a_ramp_or_a_timed_schedule() -> None:
    assert cooldown_count(LevelLoad(8, rate=2.0, ramp=("linear", 1.0, 4.0)), 100) == 0
    assert cooldown_count(LevelLoad(8, timed=True), 100) == 0
    assert cooldown_count(LevelLoad(8), 100) == 16 and cooldown_count(LevelLoad(8, rate=2.0), 100) == 25
