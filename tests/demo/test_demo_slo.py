"""The demo's capacity SLO comes from the capacity workload's own single-user latency, measured right
before the search (issue 38 item 7), here against the synthetic server (10 ms TTFT, 5 ms a token)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.demo import DEMO_CAPACITY_WORKLOAD, DemoContext, single_user_slo
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def test_the_slo_is_the_capacity_workload_s_one_user_ttft_plus_half_its_e2e(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.005, ttft_s=0.01)) as srv:
        bound, level = single_user_slo(DemoContext(out=tmp_path, model_dir=tmp_path, url=srv.url, log=lambda m: None))
    ttft, e2e = level["ttft_ms"]["p50"], level["e2e_ms"]["p50"]
    assert bound == round(ttft + 0.5 * e2e) and level["concurrency"] == 1 and level["requests_ok"] == 12
    # the capacity workload's output length: 16 tokens, 15 gaps of 5 ms after a 10 ms first token
    assert DEMO_CAPACITY_WORKLOAD["output_len"] == 16 and e2e == pytest.approx(10 + 15 * 5, rel=0.5)
