"""Issue 16 item 15: the context trial reads its levels' validity, as the basic trial does."""

from __future__ import annotations

from pathlib import Path

from seatrial.testing.server import SyntheticConfig, ThreadedServer
from seatrial.trials import run_accept

PROFILE = """
slo: {ttft_ms: 5000, percentile: 50}
max_lag_ms: 1000
trials:
  context: {short_len: 8, long_len: 64, output_len: 8, requests: 20}
"""


def test_a_level_that_did_not_return_the_asked_length_fails_the_trial(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROFILE)
    # every answer stops after 3 of the 8 asked tokens, without an error: the requests are "ok",
    # the level is not a valid measurement
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.002, fault="short", fault_every=1)) as srv:
        summary = run_accept(srv.url, profile=tmp_path / "p.yaml", trials=["context"])
    trial = summary["trials"][0]
    assert trial["verdict"] == "FAIL", trial["reasons"]
    assert (
        "8-token level invalid" in trial["reasons"][0]
        and "did not return the asked output length" in trial["reasons"][0]
    )
    assert trial["evidence"]["short"]["valid"] is False and summary["passed"] is False
