"""Issue 16 item 6: a MIX phase whose long prefills stopped early measured no interference."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from tests.servers import synthetic_server

from seatrial.load.records import RequestRecord
from seatrial.testing.server import ThreadedServer
from seatrial.trials import mixed, run_accept
from seatrial.trials.mixed import long_share

MS = 1_000_000


def rec(start_ms: float, e2e_ms: float, kind: str = "short") -> RequestRecord:
    r = RequestRecord(
        request_id=f"{kind}-{start_ms}", phase="measure", concurrency=1, kind=kind, e2e_ms=e2e_ms
    )
    r.send_ns = int(start_ms * MS)
    return r


def test_long_share_is_the_time_weighted_union_inside_the_phase() -> None:
    shorts = [rec(0, 40), rec(50, 50)]  # the phase runs 0..100 ms
    assert long_share([rec(-10, 30, "long"), rec(10, 30, "long")], shorts) == pytest.approx(0.4)
    assert long_share([rec(0, 200, "long")], shorts) == pytest.approx(1.0)
    assert long_share([], shorts) == 0.0 and long_share([rec(0, 5, "long")], []) is None


server = synthetic_server(itl_s=0.002, ttft_s=0.005)


PROFILE = """
slo: {ttft_ms: 5000, percentile: 50}
max_lag_ms: 1000
trials:
  mixed: {rounds: 3, short_requests: 20, short_concurrency: 2, short_input_len: 8, short_output_len: 8,
          long_input_len: 64, long_concurrency: 1, max_degradation_pct: 1000}
"""


def test_long_requests_that_stop_early_make_the_trial_inconclusive(
    server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def one_failed_long(env, base, users, tag, stop):  # type: ignore[no-untyped-def]
        """One long request served in 1 ms, then one refused: the user stops, as long_load does."""
        served = rec(time.perf_counter_ns() / MS, 1.0, "long")
        await asyncio.sleep(0.001)
        refused = rec(time.perf_counter_ns() / MS, 0.1, "long")
        refused.error = "HTTP 400: prompt too long"
        return [served, refused]

    (tmp_path / "p.yaml").write_text(PROFILE)
    monkeypatch.setattr(mixed, "long_load", one_failed_long)
    summary = run_accept(server.url, profile=tmp_path / "p.yaml", trials=["mixed"])
    trial = summary["trials"][0]
    assert trial["verdict"] == "INCONCLUSIVE", trial["reasons"]
    assert re.search(
        r"R1: a long prefill was in flight for \d+% of the MIX phase \(< 50%\)", trial["reasons"][0]
    )
    assert "prompt too long" in trial["reasons"][0]
    assert all(r["mix_long_share"] < 0.5 for r in trial["evidence"]["rounds"])
