"""The shared report shows the sections of the command that wrote the folder."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pages import page_of

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence" / "h200x2" / "hw_h200x2.json"


def test_hw_sheet_renders_from_a_hw_run(tmp_path: Path) -> None:
    page = page_of(tmp_path / "run", json.loads(EVIDENCE.read_text()), "hw")
    assert "collectives" in page and "REVIEW_REQUIRED" in page and "NVIDIA H200" in page
    assert "Load levels" not in page


def test_unknown_summary_says_so(tmp_path: Path) -> None:
    page = page_of(tmp_path / "run", {"something": 1})
    assert "Nothing to report" in page and "something" in page


def _level(c: int, note: str | None, engine: bool) -> dict[str, object]:
    dist = {"mean": 10.0 * c, "p50": 9.0, "p90": 11.0, "p95": 12.0, "p99": 13.0, "max": 14.0}
    server: dict[str, float] = {"running_max": c, "waiting_max": 0, "kv_cache_usage_max": 0.1}
    if engine:
        server.update(ttft_ms_mean=7.5 * c, tpot_ms_mean=2.5, e2e_ms_mean=70.0)
    return {
        "concurrency": c, "rate": None, "requests_ok": 8, "requests_failed": 0, "output_tok_s": 100.0,
        "per_user_output_tok_s": 50.0, "ttft_ms": dist, "tpot_ms": dist, "itl_ms": dist, "e2e_ms": dist,
        "server": server, "valid": True, "invalid_reasons": [],
        "client_timing": {"stamps": "kernel", **({"note": note} if note else {})},
    }  # fmt: skip


def test_bench_section_shows_the_engines_means_and_the_clients_notes(tmp_path: Path) -> None:
    levels = [_level(1, None, engine=True), _level(4, "the client stalled: <late>", engine=True)]
    page = page_of(tmp_path / "a", {"levels": levels}, "bench")
    assert "client / engine" in page and "10.0 / 7.5" in page and "40.0 / 30.0" in page
    assert "Client self-checks" in page and "C=4: the client stalled: &lt;late&gt;" in page
    assert "C=1:" not in page
    plain = page_of(tmp_path / "b", {"levels": [_level(1, None, engine=False)]}, "bench")
    assert "client / engine" not in plain and "Client self-checks" not in plain
