"""The health probe against a real loopback server, swap growth and the launch refusal through a
stand-in meminfo file, and the clean exit path."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from guard_helpers import read_lines, wait_for, write_meminfo

from seatrial.errors import GuardError
from seatrial.guard import GuardConfig, HealthConfig, run_guard


class _Health(BaseHTTPRequestHandler):
    ok_left = 3  # the first probes answer 200, every later one 503

    def do_GET(self) -> None:
        cls = type(self)
        status = 200 if cls.ok_left > 0 else 503
        cls.ok_left -= 1
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def health_server() -> Iterator[str]:
    _Health.ok_left = 3
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/health"
    server.shutdown()
    server.server_close()


def test_unhealthy_server_is_killed_and_restarted_within_budget(tmp_path: Path, health_server: str) -> None:
    health = HealthConfig(
        url=health_server, interval_ms=100, timeout_ms=500, unhealthy_after_s=0.5, grace_s=1.0
    )
    config = GuardConfig(
        min_available_gib=0.1,
        restart_margin_gib=0,
        backoff_s=0.1,
        restart_budget=1,
        stop_grace_s=1,
        history=tmp_path / "h.jsonl",
        health=health,
    )
    outcome = run_guard(config, ["sleep", "60"])
    events = read_lines(config.history)
    assert [(e["event"], e["reason"].split(" ")[0]) for e in events] == [
        ("start", "launched"),
        ("health", "healthy"),
        ("health", "unhealthy"),  # first 503 after being healthy
        ("kill", "unhealthy"),
        ("restart", "after:"),
        ("health", "unhealthy"),  # never healthy after the restart: its 1 s grace ran out
        ("kill", "unhealthy"),
        ("give-up", "restart"),
    ]
    assert events[2]["error"] == "HTTP 503"
    assert events[5]["time_unix_s"] - events[4]["time_unix_s"] >= 1.0 - 0.002  # the grace was given again
    assert outcome.counts["kill"] == 2 and outcome.counts["restart_automatic"] == 1


def test_swap_growth_past_the_limit_kills_the_group(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    write_meminfo(meminfo, available_gib=40, swap_used_gib=1, swap_gib=16)  # 1 GiB already swapped before launch
    config = GuardConfig(
        min_available_gib=12,
        max_swap_growth_gib=2,
        restart_budget=0,
        history=tmp_path / "h.jsonl",
        meminfo_path=meminfo,
    )

    def grow_swap() -> None:
        wait_for(lambda: any(e["event"] == "start" for e in read_lines(config.history)), 10, "start")
        write_meminfo(meminfo, available_gib=40, swap_used_gib=2.5, swap_gib=16)  # grew 1.5: still fine
        write_meminfo(meminfo, available_gib=40, swap_used_gib=3.5, swap_gib=16)  # grew 2.5: over the limit

    thread = threading.Thread(target=grow_swap)
    thread.start()
    outcome = run_guard(config, ["sh", "-c", "sleep 60"])
    thread.join()
    kill = next(e for e in read_lines(config.history) if e["event"] == "kill")
    assert kill["reason"] == "swap grew 2.50 GiB, past the 2.00 GiB limit"
    assert kill["swap_used_gib"] == 3.5 and kill["mem_available_gib"] == 40
    assert outcome.outcome == "gave-up" and "restart budget spent (0 per 6 h)" in outcome.reason


def test_launch_is_refused_when_memory_is_already_under_the_line(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    write_meminfo(meminfo, available_gib=11.5, swap_used_gib=0, swap_gib=16)
    config = GuardConfig(history=tmp_path / "h.jsonl", meminfo_path=meminfo)  # 12 GiB line, as in seed 000
    with pytest.raises(
        GuardError, match=r"not launching: MemAvailable 11\.50 GiB fell under the 12\.00 GiB line"
    ):
        run_guard(config, ["sh", "-c", f"touch {tmp_path}/launched"], force=False)
    assert [e["event"] for e in read_lines(config.history)] == ["refuse"]
    assert not (tmp_path / "launched").exists()


def test_command_that_succeeds_ends_the_guard_cleanly(tmp_path: Path) -> None:
    config = GuardConfig(min_available_gib=0.1, history=tmp_path / "h.jsonl")
    outcome = run_guard(config, ["sh", "-c", "sleep 0.3; exit 0"])
    assert (outcome.outcome, outcome.exit_code) == ("exited", 0)
    assert [e["event"] for e in read_lines(config.history)] == ["start", "exit"]
    assert not (tmp_path / "h.jsonl.pid").exists()  # the state file is released
