"""``--workers N``: client processes share each level; their records are pooled and the level's metrics
computed from the pool; a worker that dies leaves failed records, not a hang (against the synthetic
server; the Ray path is tests/load/test_ray_clients.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.pooled import kill_a_worker_mid_write, level_with_a_kill, pooled_level, sending
from tests.servers import synthetic_server

from seatrial.load.distributed import Clock, Merge, split
from seatrial.load.metrics import level_metrics
from seatrial.load.pools import ProcessPool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelLoad
from seatrial.load.share import WorkerClock, WorkerShare
from seatrial.load.worker import run_share
from seatrial.load.workloads import RequestSpec
from seatrial.runs import read_jsonl
from seatrial.testing.server import SyntheticConfig, ThreadedServer, start_process

server = synthetic_server(itl_s=0.004, ttft_s=0.005)


N = 64  # requests per level: a C=8 level of 0.6 s, so a worker's few ms late start moves its mean in flight little


def test_two_workers_pool_their_records_into_one_level(server: ThreadedServer, tmp_path: Path) -> None:
    args = ["bench", "--url", server.url, "--workload", "random", "--input-len", "8", "--output-len", "16",
            "--concurrency", "4,8", "--requests", str(N), "--warmup", "2", "--workers", "2", "--max-lag-ms", "200",
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
        assert len(mine) == N and {r["worker"] for r in mine} == {0, 1}
        assert all(r["output_tokens"] == 16 for r in mine)
        assert sorted(r["request_id"] for r in mine) == [f"L{level['index']}-{i:05d}" for i in range(N)]
        assert all(r["level"] == level["index"] for r in mine)
        assert level["valid"] and level["delivery"]["mean_in_flight"] == pytest.approx(c, rel=0.15)
        workers = level["client_timing"]["workers"]
        assert [w["worker"] for w in workers] == [0, 1] and all(
            w["loop_lag_ms_p99"] is not None for w in workers
        )
        # every worker got ready before the start was named, so none began late by a start's worth (a start
        # named before a worker was ready shows 300+ ms); a host's stall of a few ms is noted as such
        assert all(w["start_late_ms"] < 100 for w in workers), workers
        late = sum(w["start_late_ms"] > 10 for w in workers)
        assert sum("began" in n for n in level["notes"]) == late, level["notes"]
        # the level's loop lateness is the workers' ticks pooled (the loops that read the streams)
        assert level["client_timing"]["loop_lag_ms_max"] == max(w["loop_lag_ms_max"] for w in workers)
        # the client's CPU counts the driver's and every worker's own, over the token events
        timing = level["client_timing"]
        assert all(w["cpu_s"] > 0 for w in workers)
        assert timing["cpu_s"] == pytest.approx(timing["driver_cpu_s"] + sum(w["cpu_s"] for w in workers))
        assert timing["cpu_us_per_event"] == pytest.approx(timing["cpu_s"] / (N * 16) * 1e6, rel=0.1)
        # the level's figures are the pooled records' own, computed by the same code as for one client
        records = [RequestRecord.from_json(r) for r in mine]
        pooled = level_metrics(records)
        for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
            assert level[key] == pytest.approx(pooled[key])
        assert level["requests_ok"] == pooled["requests_ok"] == N


def test_a_worker_that_dies_leaves_failed_records_and_the_level_goes_on(tmp_path: Path) -> None:
    outcome = level_with_a_kill(ProcessPool(2), 1, 1.5, 60)  # both workers are streaming by 1.5 s
    summary = outcome.summary.to_json()
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
    assert {r["level"] for r in rows} == {s["index"] for s in steps}


def _share(url: str, n: int = 4) -> WorkerShare:
    specs = [RequestSpec(prompt="a b c d", output_len=8) for _ in range(n)]
    (share,) = split(specs, LevelLoad(2), 1, sending(url))
    return share


def test_a_worker_sends_nothing_before_the_go_and_starts_on_time(server: ThreadedServer) -> None:
    """A worker slow to get ready cannot eat the margin: the start is named only once it is ready."""
    rows: list[tuple[RequestRecord, WorkerClock]] = []
    named: list[int] = []

    async def ready() -> int:
        await asyncio.sleep(0.3)  # e.g. a cold import or a large share
        named.append(time.time_ns() + 100_000_000)
        return named[0]

    stats = asyncio.run(run_share(_share(server.url), lambda rec, clock: rows.append((rec, clock)), ready))
    sends = [rec.send_ns + clock.mono_to_wall_ns for rec, clock in rows]
    assert len(rows) == 4 and min(sends) >= named[0]
    assert stats.start_late_ms == 0.0


def test_a_worker_that_began_late_says_by_how_much() -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.001)) as srv:

        async def ready() -> int:
            return time.time_ns() - 200_000_000  # a start already past when the go came

        stats = asyncio.run(run_share(_share(srv.url), lambda rec, clock: None, ready))
    assert stats.start_late_ms >= 200
    merge = Merge({0: Clock(0)}, 0, 0, 2)
    merge.worker_done(stats)
    assert merge.workers[0].start_late_ms == stats.start_late_ms
    assert any("client worker 0 began" in n and "after the common start" in n for n in merge.notes)


GRID_N = (1, 2, 3, 4, 5, 7, 16, 31, 32, 100)
GRID_C = (1, 2, 3, 4, 6, 8, 16)
GRID_W = (1, 2, 3, 4, 8, 16)


@pytest.mark.parametrize("rate", [None, 10.0])
def test_the_split_sends_every_request_exactly_once(rate: float | None) -> None:
    """Issue 21 item 14: over a grid of (n, C, W), min(W, C) workers at most, every request index in
    exactly one share, the users (or the open loop's cap) adding up to C and never more; an open loop whose
    cap is no cap (C >= n) lets each worker keep all of its requests in flight (issue 24)."""
    to = sending()
    for n in GRID_N:
        specs = [RequestSpec(prompt="p", output_len=4) for _ in range(n)]
        for c in GRID_C:
            for w in GRID_W:
                shares = split(specs, LevelLoad(c, rate), w, to)
                where = f"n={n} C={c} W={w} rate={rate}"
                sent = sorted(i for s in shares for i in s.indices)
                assert sent == list(range(n)), where
                assert len(shares) <= min(w, c) and len({s.worker for s in shares}) == len(shares), where
                assert all(s.load.concurrency >= 1 and s.worker < w for s in shares), where
                assert sum(s.load.concurrency for s in shares) <= c, where
                assert all(len(s.specs) == len(s.indices) for s in shares), where
                if rate is not None:
                    assert all(len(s.load.offsets_s or []) == len(s.indices) for s in shares), where
                if rate is not None and c >= n:
                    assert all(s.load.concurrency == len(s.indices) for s in shares), where
                elif n >= min(w, c):
                    assert sum(s.load.concurrency for s in shares) == c, where


def test_a_pool_given_no_share_returns_at_once() -> None:
    """(4, 8, 16) made no share on the old split and ProcessPool.run never returned."""
    pool = ProcessPool(1)
    try:
        out = asyncio.run(asyncio.wait_for(pool.run([], lambda w, r: None, time.time_ns), 30))
    finally:
        pool.close()
    assert out == {}


def _in_its_own_process(itl_ms: float, ttft_ms: float) -> Iterator[str]:
    """The synthetic server in a process of its own (its timing never waits for this one's GIL)."""
    proc, url = start_process(itl_ms=itl_ms, ttft_ms=ttft_ms)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def own_server() -> Iterator[str]:
    yield from _in_its_own_process(10, 5)


def test_more_workers_than_users_still_send_every_request(own_server: str, tmp_path: Path) -> None:
    args = ["bench", "--url", own_server, "--workload", "random", "--input-len", "8", "--output-len", "4",
            "--concurrency", "3", "--requests", "32", "--warmup", "0", "--workers", "4", "--max-lag-ms", "500",
            "--out", str(tmp_path / "run"), "--json", str(tmp_path / "s.json")]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    rows = [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]
    assert sorted(r["request_id"] for r in rows) == [f"L0-{i:05d}" for i in range(32)]
    assert {r["worker"] for r in rows} == {0, 1, 2} and all(r["error"] is None for r in rows)


def test_an_open_loop_cap_is_never_raised_by_the_workers(own_server: str, tmp_path: Path) -> None:
    """``--max-concurrency 2 --workers 4``: never more than 2 requests in flight (4 before)."""
    args = ["bench", "--url", own_server, "--workload", "random", "--input-len", "8", "--output-len", "16",
            "--rate", "40", "--max-concurrency", "2", "--requests", "40", "--warmup", "0", "--workers", "4",
            "--max-lag-ms", "500", "--out", str(tmp_path / "run"), "--json", str(tmp_path / "s.json")]  # fmt: skip
    result = invoke(args)
    assert result.code in (0, 1), result.output
    rows = [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]
    assert len(rows) == 40 and all(r["error"] is None for r in rows)
    edges = sorted([(r["sent_ms"], 1) for r in rows] + [(r["sent_ms"] + r["e2e_ms"], -1) for r in rows])
    in_flight = peak = 0
    for _, step in edges:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak == 2, peak  # 40/s of ~170 ms requests would hold about 7 in flight without the cap
    workers = json.loads((tmp_path / "s.json").read_text())["levels"][0]["client_timing"]["workers"]
    assert [w["worker"] for w in workers] == [0, 1]


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    yield from _in_its_own_process(0.1, 1)


def _kill_mid_write(pids: list[int], killed: list[tuple[int, bool]]) -> Callable[[], None]:
    return lambda: killed.append(kill_a_worker_mid_write(pids))


def test_killing_workers_mid_batch_never_blocks_the_level(fast_server: str) -> None:
    """Item 15: a worker SIGKILLed halfway through writing a batch to the driver (caught blocked in the
    write, the driver stopped meanwhile so that the pipes fill) leaves failed records for what it had not
    sent back; the other workers' records keep coming and the level ends, every time. 600 requests: the
    kill comes once a worker's pipe is full, after ~35 of its ~200, so ~165 are left to fail (2,000 took
    45 s here, 600 take 25 s, every kill caught mid-write in both)."""
    caught = 0
    for attempt in range(5):
        pool = ProcessPool(3)
        killed: list[tuple[int, bool]] = []
        pids = [p.pid for p in pool.procs if p.pid]
        try:
            outcome = pooled_level(pool, fast_server, _kill_mid_write(pids, killed), 0, 180,
                                   requests=600, concurrency=24, output_len=128)  # fmt: skip
        finally:
            pool.close()
        ((pid, mid_write),) = killed
        caught += mid_write
        victim = pids.index(pid)
        records = outcome.records
        where = f"attempt {attempt}, worker {victim}"
        assert sorted(r.request_id for r in records) == [f"L0-{i:05d}" for i in range(600)], where
        failed = [r for r in records if not r.ok]
        assert failed and all(r.worker == victim and "died" in (r.error or "") for r in failed), where
        assert any(f"client worker {victim} died" in n for n in outcome.summary.notes), where
    assert caught >= 3, f"only {caught} of 5 kills came while the worker was writing: the test did not test"
