"""``--workers N``: client processes share each level; their records are pooled and the level's metrics
computed from the pool; a worker that dies leaves failed records, not a hang (against the synthetic
server; the Ray path is tests/load/test_ray_clients.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.pooled import level_with_a_kill

from seatrial.load.distributed import Clock, Merge, split
from seatrial.load.metrics import level_metrics
from seatrial.load.pools import ProcessPool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelPlan
from seatrial.load.worker import run_share
from seatrial.load.workloads import RequestSpec
from seatrial.runs import read_jsonl
from seatrial.server.synthetic import SyntheticConfig, ThreadedServer


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(SyntheticConfig(itl_s=0.004, ttft_s=0.005)) as srv:
        yield srv


def test_two_workers_pool_their_records_into_one_level(server: ThreadedServer, tmp_path: Path) -> None:
    args = ["bench", "--url", server.url, "--workload", "random", "--input-len", "8", "--output-len", "16",
            "--concurrency", "4,8", "--requests", "32", "--warmup", "2", "--workers", "2", "--max-lag-ms", "200",
            "--out", str(tmp_path / "run"), "--json", str(tmp_path / "s.json")]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["clients"]["workers"] == 2 and len(summary["clients"]["clocks"]) == 2
    rows = [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]
    for level in summary["levels"]:
        c = level["concurrency"]
        mine = [
            r for r in rows if r["concurrency"] == c and r["request_id"].startswith(f"L{level['index']}-")
        ]
        assert len(mine) == 32 and {r["worker"] for r in mine} == {0, 1}
        assert all(r["output_tokens"] == 16 for r in mine)
        assert sorted(r["request_id"] for r in mine) == [f"L{level['index']}-{i:05d}" for i in range(32)]
        assert level["valid"] and level["delivery"]["mean_in_flight"] == pytest.approx(c, rel=0.15)
        workers = level["client_timing"]["workers"]
        assert [w["worker"] for w in workers] == [0, 1] and all(
            w["loop_lag_ms_p99"] is not None for w in workers
        )
        # every worker got ready before the start was named, so none began late
        assert all(w["start_late_ms"] < 10 for w in workers) and not any("began" in n for n in level["notes"])
        # the level's loop lateness is the workers' ticks pooled (the loops that read the streams)
        assert level["client_timing"]["loop_lag_ms_max"] == max(w["loop_lag_ms_max"] for w in workers)
        # the client's CPU counts the driver's and every worker's own, over the token events
        timing = level["client_timing"]
        assert all(w["cpu_s"] > 0 for w in workers)
        assert timing["cpu_s"] == pytest.approx(timing["driver_cpu_s"] + sum(w["cpu_s"] for w in workers))
        assert timing["cpu_us_per_event"] == pytest.approx(timing["cpu_s"] / (32 * 16) * 1e6, rel=0.1)
        # the level's figures are the pooled records' own, computed by the same code as for one client
        records = [RequestRecord.from_json(r) for r in mine]
        pooled = level_metrics(records)
        for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
            assert level[key] == pytest.approx(pooled[key])
        assert level["requests_ok"] == pooled["requests_ok"] == 32


def test_a_worker_that_dies_leaves_failed_records_and_the_level_goes_on(tmp_path: Path) -> None:
    outcome = level_with_a_kill(ProcessPool(2), 1, 1.5, 60)  # both workers are streaming by 1.5 s
    summary = outcome.summary
    records = outcome.records
    failed = [r for r in records if not r.ok]
    assert (
        len(records) == 16
        and failed
        and all(r.worker == 1 and "client worker 1 died" in r.error for r in failed)
    )
    assert all(r.ok for r in records if r.worker == 0)
    assert not summary["valid"] and any("client worker 1 died" in n for n in summary["notes"])


def test_accept_levels_share_the_workers(server: ThreadedServer, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("slo: {ttft_ms: 5000, percentile: 50}\nmax_lag_ms: 500\ntrials:\n"
                       "  saturation: {ladder: [2, 4], min_requests: 20, warmup: 0, input_len: 8, output_len: 8, max_concurrency: 4}\n")  # fmt: skip
    from seatrial.trials import run_accept

    summary = run_accept(server.url, profile=profile, trials=["saturation"], out_dir=tmp_path / "run",
                         clients={"workers": 2})  # fmt: skip
    steps = summary["trials"][0]["evidence"]["steps"]
    assert [s["concurrency"] for s in steps] == [2, 4] and all(s["requests"] == 20 for s in steps)
    rows = [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]
    assert {r["worker"] for r in rows} == {0, 1}


def _share(url: str, n: int = 4) -> dict[str, object]:
    specs = [RequestSpec(prompt="a b c d", output_len=8) for _ in range(n)]
    (share,) = split(specs, LevelPlan(2), 1)
    return share | {"url": url, "model": "m", "endpoint": "completions", "headers": {}, "continuous_usage": False,
                    "timeout_s": 30.0, "stall_timeout_s": 30.0, "stamps": "loop", "phase": "measure",
                    "id_prefix": "L0", "wall_offset_ns": 0}  # fmt: skip


def test_a_worker_sends_nothing_before_the_go_and_starts_on_time(server: ThreadedServer) -> None:
    """A worker slow to get ready cannot eat the margin: the start is named only once it is ready."""
    rows: list[dict[str, object]] = []
    named: list[int] = []

    async def ready() -> int:
        await asyncio.sleep(0.3)  # e.g. a cold import or a large share
        named.append(time.time_ns() + 100_000_000)
        return named[0]

    stats = asyncio.run(run_share(_share(server.url), rows.append, ready))
    sends = [int(r["send_ns"]) + int(r["mono_to_wall_ns"]) for r in rows]  # type: ignore[call-overload]
    assert len(rows) == 4 and min(sends) >= named[0]
    assert stats["start_late_ms"] == 0.0


def test_a_worker_that_began_late_says_by_how_much() -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.001)) as srv:

        async def ready() -> int:
            return time.time_ns() - 200_000_000  # a start already past when the go came

        stats = asyncio.run(run_share(_share(srv.url), lambda row: None, ready))
    assert stats["start_late_ms"] >= 200
    merge = Merge({0: Clock(0)}, 0, 0, 2)
    merge.worker_done(0, stats)
    assert merge.workers[0]["start_late_ms"] == stats["start_late_ms"]
    assert any("client worker 0 began" in n and "after the common start" in n for n in merge.notes)
