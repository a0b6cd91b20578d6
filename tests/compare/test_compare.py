"""``seatrial compare`` on bench folders measured against synthetic servers of known speed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.clirun import invoke

from seatrial.testing.server import SyntheticConfig, ThreadedServer


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


def test_single_runs_never_claim_an_effect_but_show_their_within_run_interval(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """One start per side: a server 3x faster is still INCONCLUSIVE, since start-to-start variation is
    unknown; the requests' own interval is shown, labelled within run (issue 22 item 4)."""
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
        for x in m.values():
            assert x["verdict"] == "INCONCLUSIVE" and x["starts"] == [1, 1]
            assert "one start per side: start-to-start variation unknown" in x["reasons"]
        tpot = m["tpot_ms.p50"]
        assert tpot["method"] == "bootstrap-requests-within-run" and tpot["interval"] == "within run"
        assert tpot["ratio"] < 0.5 and tpot["ci_pct"][0] > 50  # the requests alone: clearly faster
        itl = m["itl_ms.p99"]  # requests resampled with their gaps together
        assert itl["method"] == "bootstrap-requests-within-run" and itl["pooled_n"][0] == 24 * 11
        # throughput: one value each, no interval of any kind
        tok = m["output_tok_s"]
        assert tok["ci_pct"] == [None, None] and tok["interval"] is None and tok["ratio"] > 1.5
    back = invoke(["compare", str(runs["fast"]), str(runs["slow"])])
    assert "REGRESSED" not in back.output and "IMPROVED" not in back.output
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Comparison" in page and "one start per side" in page and "<th>method</th>" in page
    assert "within run" in page and "<svg" in page


def test_a_run_compared_with_itself_has_no_effect(runs: dict[str, Path]) -> None:
    from seatrial.compare.runs import compare

    summary = compare([str(runs["fast"]), str(runs["fast"])])
    for c in summary.comparisons:
        for m in c.metrics:
            assert m.verdict == "INCONCLUSIVE" and (m.gain_pct or 0.0) == pytest.approx(0.0)


def test_runs_of_different_workloads_are_refused_with_the_reason(runs: dict[str, Path]) -> None:
    result = invoke(["compare", str(runs["fast"]), str(runs["longer"])])
    assert result.code == 2 and "input_len: 8 vs 16" in result.output and "not compared" in result.output
    result = invoke(["compare", str(runs["fast"])])
    assert result.code == 2 and "two or more runs" in result.output
    result = invoke(["compare", str(runs["fast"]), "/nonexistent"])
    assert result.code == 2 and "not a seatrial run folder" in result.output


def test_two_deployments_give_the_per_phase_table_with_intervals_and_refuse_the_split(
    servers: tuple[ThreadedServer, ThreadedServer], runs: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 23: two deployments differ in precision and topology at once, so their gap is not split;
    each phase's ratio is paired by level with its interval over starts (two runs of a kind: two starts)."""
    fast, slow = servers
    again = {"fd2": bench(fast.url, tmp_path / "fd2", "decode", 4, 16), "sd2": bench(slow.url, tmp_path / "sd2", "decode", 4, 16)}
    args = ["compare", f"fast={runs['fast-prefill']}", f"fast={runs['fast-decode']}", f"fast={again['fd2']}",
            f"slow={runs['slow-prefill']}", f"slow={runs['slow-decode']}", f"slow={again['sd2']}",
            "--json", str(tmp_path / "d.json"), "--out", str(tmp_path / "out")]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    dep = json.loads((tmp_path / "d.json").read_text())["deployment"]
    assert dep["names"] == ["fast", "slow"] and dep["design"] == "pair" and dep["split"] is None
    assert "confounded" in dep["confounded"]
    kinds = {(p["workload"], p["level"]) for p in dep["phases"]}
    assert kinds == {("prefill", "C=1"), ("prefill", "C=4"), ("decode", "C=1"), ("decode", "C=4")}
    for p in dep["phases"]:
        if p["workload"] == "decode":  # 6 ms against 2 ms per token: 3x, with its interval from 2+2 starts
            cell = p["decode_speed"]
            assert cell["starts"] == [2, 2] and cell["ci"][0] < cell["ratio"] < cell["ci"][1]
            assert cell["ratio"] == pytest.approx(3.0, rel=0.35)
        else:  # one start each: a ratio, no interval
            assert p["prompt_tok_s"]["starts"] == [1, 1] and p["prompt_tok_s"]["ci"] == [None, None]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "how many times faster fast is than slow" in page and "confounded" in page


def test_a_two_by_two_of_deployments_separates_precision_from_topology(tmp_path: Path) -> None:
    """Precision halves the time per token (ITL 2 against 4 ms), topology multiplies it by 1.5: four servers,
    two decode runs each; each factor's interval holds its truth and the interaction holds 1."""
    itl = {"fp4@one": 0.002, "fp8@one": 0.004, "fp4@two": 0.003, "fp8@two": 0.006}
    args = ["compare"]
    for name, s in itl.items():
        with ThreadedServer(SyntheticConfig(itl_s=s, ttft_s=0.004)) as srv:
            for k in range(2):
                args.append(f"{name}={bench(srv.url, tmp_path / f'{name}-{k}', 'decode', 4, 24)}")
    result = invoke([*args, "--json", str(tmp_path / "f.json")])
    assert result.code == 0, result.output
    dep = json.loads((tmp_path / "f.json").read_text())["deployment"]
    assert dep["design"] == "2x2" and dep["precisions"] == ["fp4", "fp8"] and dep["topologies"] == ["one", "two"]
    truth = {"precision": 2.0, "topology": 1.5, "interaction": 1.0}
    for row in dep["split"]:
        lo, hi = row["ci"]
        assert row["measure"] == "decode_speed" and lo is not None and lo * 0.9 <= truth[row["factor"]] <= hi * 1.1, row
    bad = invoke(["compare", *args[1:4], f"odd={args[1].split('=', 1)[1]}"])
    assert bad.code == 2 and "PRECISION@TOPOLOGY" in bad.output


def synthetic_run(label: str, tpot_ms: float, starts: int = 3, seed: int = 0) -> Any:
    """A bench-like Run with ``starts`` starts at C=4: 100 requests each, TPOT around ``tpot_ms``."""
    import numpy as np

    from seatrial.experiment.sources import Run

    rng = np.random.default_rng(seed)
    key = "random 8/12"
    run = Run(label, "bench", Path(label), {key: {"name": "random", "input_len": 8, "output_len": 12}})
    run.levels[(key, "C=4")] = [
        {"concurrency": 4, "output_tok_s": 4000 / tpot_ms * float(rng.lognormal(0, 0.01)),
         "values": {"tpot_ms": tpot_ms * rng.lognormal(0, 0.02, 100)}}
        for _ in range(starts)
    ]  # fmt: skip
    return run


def test_a_slower_candidate_with_starts_on_both_sides_is_regressed() -> None:
    """Catches a REGRESSED that never fires (or IMPROVED/REGRESSED swapped by the direction of a
    lower-is-better metric): TPOT 4 -> 6 ms over 3 starts a side is REGRESSED in TPOT and throughput;
    the reverse is IMPROVED; the same speed is NO_EFFECT."""
    from seatrial.compare.runs import compare_levels

    fast, slow = synthetic_run("fast", 4.0, seed=1), synthetic_run("slow", 6.0, seed=2)
    ((row,),) = [compare_levels(fast, slow, "random 8/12", 5.0)]
    m = {x["metric"]: x for x in row["metrics"]}
    assert m["tpot_ms.p50"]["verdict"] == "REGRESSED" and m["tpot_ms.p50"]["ci_pct"][1] < -5, m["tpot_ms.p50"]
    assert m["output_tok_s"]["verdict"] == "REGRESSED" and m["output_tok_s"]["starts"] == [3, 3]
    (back,) = compare_levels(slow, fast, "random 8/12", 5.0)
    assert {x["metric"]: x["verdict"] for x in back["metrics"]}["tpot_ms.p50"] == "IMPROVED"
    (same,) = compare_levels(fast, synthetic_run("fast2", 4.0, seed=3), "random 8/12", 5.0)
    assert {x["metric"]: x["verdict"] for x in same["metrics"]}["tpot_ms.p50"] == "NO_EFFECT"


@pytest.mark.parametrize(
    ("summary", "needle"),
    [
        (b"", "summary.json: is not a seatrial JSON file"),
        (bytes(range(256)), "summary.json: is not a seatrial JSON file"),
        (b"[1, 2]", "summary.json: holds a JSON list, not a seatrial summary object"),
        (b'{"levels": 5}', "summary.json: not the bench summary seatrial writes: levels: Input should be a valid list"),
    ],
)
def test_a_broken_summary_is_named_by_report_and_compare(
    runs: dict[str, Path], tmp_path: Path, summary: bytes, needle: str
) -> None:
    """Issue 42 item 14: a truncated, binary or wrongly typed summary.json was an internal error (exit 70)
    or an empty report."""
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(runs["fast"], broken)
    (broken / "summary.json").write_bytes(summary)
    for args in (["report", str(broken)], ["compare", str(runs["fast"]), str(broken)]):
        result = invoke(args)
        assert result.code == 2 and needle in result.output, (args, result.output)
    if summary.startswith(b"{"):
        return  # an object is a run.json (of no command seatrial knows a summary model for)
    (broken / "run.json").write_bytes(summary)  # the same of run.json: named as itself
    for args in (["report", str(broken)], ["compare", str(runs["fast"]), str(broken)]):
        result = invoke(args)
        assert result.code == 2 and "run.json: " in result.output, (args, result.output)


def test_a_run_stopped_before_its_first_level_has_nothing_to_compare(runs: dict[str, Path], tmp_path: Path) -> None:
    import json
    import shutil

    stopped = tmp_path / "stopped"
    shutil.copytree(runs["fast"], stopped)
    summary = json.loads((stopped / "summary.json").read_text())
    (stopped / "summary.json").write_text(json.dumps({**summary, "levels": []}))
    result = invoke(["compare", str(stopped), str(runs["fast"])])
    assert result.code == 2 and "stopped measured no workload" in result.output, result.output
