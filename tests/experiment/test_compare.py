"""``seatrial compare`` on bench folders measured against synthetic servers of known speed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke

from seatrial.server.synthetic import SyntheticConfig, ThreadedServer


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ThreadedServer, ThreadedServer]]:
    with (
        ThreadedServer(SyntheticConfig(itl_s=0.002, ttft_s=0.004)) as fast,
        ThreadedServer(SyntheticConfig(itl_s=0.006, ttft_s=0.012)) as slow,
    ):
        yield fast, slow


def bench(url: str, out: Path, workload: str = "random", input_len: int = 8, output_len: int = 12) -> Path:
    args = ["bench", "--url", url, "--workload", workload, "--input-len", str(input_len), "--output-len",
            str(output_len), "--concurrency", "1,4", "--requests", "24", "--warmup", "2", "--max-lag-ms", "200",
            "--out", str(out)]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(
    servers: tuple[ThreadedServer, ThreadedServer], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    fast, slow = servers
    tmp = tmp_path_factory.mktemp("cmp")
    return {
        "slow": bench(slow.url, tmp / "slow"),
        "fast": bench(fast.url, tmp / "fast"),
        "longer": bench(fast.url, tmp / "longer", input_len=16),
        "fast-prefill": bench(fast.url, tmp / "fp", "prefill", 32, 1),
        "slow-prefill": bench(slow.url, tmp / "sp", "prefill", 32, 1),
        "fast-decode": bench(fast.url, tmp / "fd", "decode", 4, 16),
        "slow-decode": bench(slow.url, tmp / "sd", "decode", 4, 16),
    }


def test_a_faster_server_is_improved_level_by_level(runs: dict[str, Path], tmp_path: Path) -> None:
    result = invoke(["compare", str(runs["slow"]), str(runs["fast"]), "--json", str(tmp_path / "c.json"),
                     "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.code == 0, result.output
    summary = json.loads((tmp_path / "c.json").read_text())
    assert (
        summary["mode"] == "runs" and summary["reference"] == "slow" and summary["workload"] == "random 8/12"
    )
    assert [c["level"] for c in summary["comparisons"]] == ["C=1", "C=4"]
    for c in summary["comparisons"]:
        m = {x["metric"]: x for x in c["metrics"]}
        assert m["tpot_ms.p50"]["verdict"] == "IMPROVED" and m["tpot_ms.p50"]["ratio"] < 0.5
        assert (
            m["ttft_ms.p50"]["verdict"] == "IMPROVED" and m["tpot_ms.p50"]["method"] == "bootstrap-requests"
        )
        # one run each: throughput has no interval, so it is never called improved on a point estimate
        assert m["output_tok_s"]["verdict"] == "INCONCLUSIVE" and m["output_tok_s"]["ratio"] > 1.5
    back = invoke(["compare", str(runs["fast"]), str(runs["slow"])])
    assert "REGRESSED" in back.output
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Comparison" in page and "IMPROVED" in page and "<svg" in page


def test_a_run_compared_with_itself_has_no_effect(runs: dict[str, Path]) -> None:
    from seatrial.experiment.compare import compare

    summary = compare([str(runs["fast"]), str(runs["fast"])])
    for c in summary["comparisons"]:
        for m in c["metrics"]:
            assert m["verdict"] in ("NO_EFFECT", "INCONCLUSIVE") and (m["gain_pct"] or 0.0) == pytest.approx(
                0.0
            )


def test_runs_of_different_workloads_are_refused_with_the_reason(runs: dict[str, Path]) -> None:
    result = invoke(["compare", str(runs["fast"]), str(runs["longer"])])
    assert result.code == 2 and "input_len: 8 vs 16" in result.output and "not compared" in result.output
    result = invoke(["compare", str(runs["fast"])])
    assert result.code == 2 and "two or more runs" in result.output
    result = invoke(["compare", str(runs["fast"]), "/nonexistent"])
    assert result.code == 2 and "not a seatrial run folder" in result.output


def test_two_deployments_give_the_per_phase_table_and_the_split(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    args = ["compare", f"fast={runs['fast-prefill']}", f"fast={runs['fast-decode']}", f"slow={runs['slow-prefill']}",
            f"slow={runs['slow-decode']}", "--json", str(tmp_path / "d.json"), "--out", str(tmp_path / "out")]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    dep = json.loads((tmp_path / "d.json").read_text())["deployment"]
    assert dep["names"] == ["fast", "slow"] and dep["estimate"] is True
    kinds = {(p["workload"], p["level"]) for p in dep["phases"]}
    assert kinds == {("prefill", "C=1"), ("prefill", "C=4"), ("decode", "C=1"), ("decode", "C=4")}
    # decode TPOT: 6 ms against 2 ms per token, the precision share about 3x
    assert dep["precision_share"] == pytest.approx(3.0, rel=0.35)
    for s in dep["split"]:
        assert s["topology_share"] == pytest.approx(s["prefill_ratio"] / s["precision_share"])
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Prefill gap split (an estimate)" in page and "precision share" in page
