"""A server that misbehaves on purpose: every fault ends as a failed record with its error, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.benchrun import bench_into

from seatrial.load.config import BenchConfig
from seatrial.runs.folder import read_jsonl
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def bench_cfg(url: str, **load: object) -> BenchConfig:
    return BenchConfig.model_validate(
        {
            "target": {"url": url},
            "workload": {"name": "random", "input_len": 8, "output_len": 6},
            "load": {"concurrency": [2], "requests": 6, "warmup": 0, "stall_timeout_s": 1.0, **load},
        }
    )


def run(cfg: BenchConfig, out: Path) -> dict:
    return bench_into(cfg, out, timeout_s=30)


EXPECTED = {
    "http500": "HTTP 500",
    "http429": "HTTP 429",
    "die": "ClientPayloadError",
    "stall": "timeout",
    "malformed": "malformed SSE",
    "no_done": "before [DONE]",
}


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_fault_becomes_failed_record(fault: str, tmp_path: Path) -> None:
    # one user: the server sees the measured requests first and in order (with two, a cool-down request
    # could reach it before the last measured one and shift which arrivals are every second)
    with ThreadedServer(SyntheticConfig(fault=fault, fault_every=2, itl_s=0.001)) as srv:
        summary = run(bench_cfg(srv.url, concurrency=[1]), tmp_path)
    level = summary["levels"][0]
    assert (level["requests_ok"], level["requests_failed"]) == (3, 3)
    assert level["valid"] is False and "3/6 requests failed" in level["invalid_reasons"][0]
    rows = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] != "cooldown"]
    assert len(rows) == 6  # nothing lost
    errors = [r["error"] for r in rows if r["error"]]
    assert len(errors) == 3 and all(EXPECTED[fault] in e for e in errors), errors
    assert all(r["output_tokens"] == 6 for r in rows if not r["error"])


def test_short_output_makes_level_invalid(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(fault="short", fault_every=3, itl_s=0.001)) as srv:
        summary = run(bench_cfg(srv.url), tmp_path)
    level = summary["levels"][0]
    assert level["requests_failed"] == 0
    assert any("did not return the asked output length" in r for r in level["invalid_reasons"])


def test_error_threshold_allows_some_failures(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(fault="http500", fault_every=3, itl_s=0.001)) as srv:
        summary = run(bench_cfg(srv.url, max_error_rate=0.5), tmp_path)
    assert summary["levels"][0]["requests_failed"] == 2 and summary["valid"] is True


def test_dead_server_is_a_clear_error(tmp_path: Path) -> None:
    from seatrial.errors import ServerError
    from seatrial.server.process import free_port

    with pytest.raises(ServerError, match="cannot reach"):
        run(bench_cfg(f"http://127.0.0.1:{free_port()}"), tmp_path)


def test_request_ids_and_server_join(tmp_path: Path) -> None:
    # ~0.5 s of load: the scrapes of the level's first quarter second fall while requests are in flight
    # (a level over before the first scrape has no gauge reading: n/a, tests/server/test_prom.py)
    with ThreadedServer(SyntheticConfig(itl_s=0.03)) as srv:
        summary = run(bench_cfg(srv.url), tmp_path)
    rows = read_jsonl(tmp_path / "requests.jsonl")
    measured = [r for r in rows if r["phase"] == "measure"]
    assert len(measured) == 6 and all(r["response_id"] == r["request_id"] for r in measured)  # X-Request-Id
    # the server's counters over the level's window: the measured requests' and the cool-down's that were
    # sent while the last measured ones ran (2 users: at most 2, cancelled once those were done)
    cooling = [r for r in rows if r["phase"] == "cooldown"]
    server = summary["levels"][0]["server"]
    assert len(cooling) <= 2 and 36 <= server["generation_tokens"] <= 36 + 6 * len(cooling)
    assert 48 <= server["prompt_tokens"] <= 48 + 8 * len(cooling)
    assert server["running_max"] is not None and server["scrape_failures"] == 0
