"""Which requests of a run folder belong to a level: records carry their level (issue 26 item 1); rows of
folders written before that are still read by their id's ``L<index>-`` prefix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.clirun import invoke

from seatrial.experiment.sources import level_values
from seatrial.runs import read_jsonl
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def _row(request_id: str, ttft_ms: float, **extra: Any) -> dict[str, Any]:
    return {"request_id": request_id, "phase": "measure", "concurrency": 2, "error": None, "ttft_ms": ttft_ms,
            "tpot_ms": 1.0, "e2e_ms": 10.0, "itl_ms": [1.0], "output_tokens": 2, **extra}  # fmt: skip


def _folder(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_a_request_is_of_the_level_it_names(tmp_path: Path) -> None:
    """The row's ``level`` decides, not its id: an accept probe (``P1-...``, no level) is of none."""
    folder = _folder(tmp_path, [
        _row("L0-00000", 5.0, level=0),
        _row("L1-00000", 7.0, level=1),
        _row("P1-control-00000", 9.0, level=None),
        _row("renamed-00000", 11.0, level=1),  # an id that says nothing: the field still places it
        _row("L1-warm-00000", 13.0, level=1, phase="warmup"),
    ])  # fmt: skip
    assert level_values(folder, {"index": 0, "concurrency": 2})["ttft_ms"] == [5.0]
    assert level_values(folder, {"index": 1, "concurrency": 2})["ttft_ms"] == [7.0, 11.0]


def test_rows_written_before_records_carried_their_level_are_read_by_their_id(tmp_path: Path) -> None:
    folder = _folder(tmp_path, [_row("L0-00000", 5.0), _row("L1-00000", 7.0), _row("L1-00001", 8.0),
                                _row("P1-control-00000", 9.0)])  # fmt: skip
    assert level_values(folder, {"index": 0, "concurrency": 2})["ttft_ms"] == [5.0]
    assert level_values(folder, {"index": 1, "concurrency": 2})["ttft_ms"] == [7.0, 8.0]
    assert level_values(folder, {"index": None, "concurrency": 2})["ttft_ms"] == [5.0, 7.0, 8.0, 9.0]  # before levels had an index


def test_bench_writes_each_request_with_its_level(tmp_path: Path) -> None:
    """Warm-up and measured requests of every level, from one client."""
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.001)) as server:
        result = invoke(["bench", "--url", server.url, "--workload", "random", "--input-len", "4", "--output-len", "2",
                         "--concurrency", "1,2", "--requests", "6", "--warmup", "2", "--max-lag-ms", "500",
                         "--out", str(tmp_path)])  # fmt: skip
    assert result.code == 0, result.output
    rows = [r for r in read_jsonl(tmp_path / "requests.jsonl") if r["phase"] != "cooldown"]
    assert len(rows) == 2 * (6 + 2) and all(r["request_id"].startswith(f"L{r['level']}-") for r in rows)
    assert sorted((r["level"], r["phase"]) for r in rows) == sorted(
        (level, phase) for level in (0, 1) for phase, n in (("warmup", 2), ("measure", 6)) for _ in range(n)
    )
    levels = [{"index": i, "concurrency": c} for i, c in ((0, 1), (1, 2))]
    assert [len(level_values(tmp_path, lv)["ttft_ms"]) for lv in levels] == [6, 6]


def test_a_level_reads_only_its_window(tmp_path: Path) -> None:
    """Rows of a level sent before its window began (load.window) stay on disk as measured, never read."""
    folder = _folder(tmp_path, [_row("L0-00000", 50.0, level=0, sent_ms=1.0), _row("L0-00001", 6.0, level=0, sent_ms=9.0),
                                _row("L0-00002", 5.0, level=0, sent_ms=12.0)])  # fmt: skip
    assert level_values(folder, {"index": 0, "concurrency": 2, "window": {"start_ms": 9.0}})["ttft_ms"] == [6.0, 5.0]
    assert level_values(folder, {"index": 0, "concurrency": 2, "window": None})["ttft_ms"] == [50.0, 6.0, 5.0]


def test_two_traces_are_two_workloads_and_a_new_field_is_a_key() -> None:
    """Issue 44 item 5: the keys are the workload settings' own, so a trace, its format, speedup and slice,
    sessions and turns (left out of the hand-kept list) tell workloads apart; the seed does not."""
    from seatrial.experiment.sources import WORKLOAD_KEYS, workload_differences
    from seatrial.load.config import WorkloadConfig

    assert set(WORKLOAD_KEYS) == (set(WorkloadConfig.model_fields) - {"seed"}) | {"endpoint"}
    base = {"name": "trace", "trace": "a.jsonl", "trace_format": "jsonl", "speedup": 1.0, "endpoint": "completions"}
    assert workload_differences(base, {**base, "trace": "b.jsonl"}) == ["trace: 'a.jsonl' vs 'b.jsonl'"]
    assert workload_differences(base, {**base, "speedup": 2.0}) == ["speedup: 1.0 vs 2.0"]
    sessions = {"name": "sessions", "sessions": 4, "turns": 3}
    assert workload_differences(sessions, {**sessions, "turns": 5}) == ["turns: 3 vs 5"]
    assert workload_differences({**base, "seed": 1}, {**base, "seed": 2}) == []
    assert workload_differences(base, {k: v for k, v in base.items() if k != "speedup"}) == []  # an older folder


def _level(c: int) -> dict[str, Any]:
    """A bench level as a folder written before levels had an index holds it (no ``index``)."""
    dist = {"mean": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0}
    return {"concurrency": c, "rate": None, "requests_ok": 1, "requests_failed": 0, "output_tok_s": 1.0,
            "per_user_output_tok_s": 1.0, "ttft_ms": dist, "tpot_ms": dist, "itl_ms": dist, "e2e_ms": dist,
            "server": {}, "valid": True, "invalid_reasons": []}  # fmt: skip


def test_compare_reads_a_folder_whose_levels_have_no_index_by_concurrency(tmp_path: Path) -> None:
    """Read through the typed reader, a level without ``index`` came back with the model's default 0: every level
    of such a folder took level 0's requests (or none), and compare compared the wrong requests, silently."""
    from seatrial.experiment.sources import load_runs

    folder = _folder(tmp_path, [_row("a", 5.0, concurrency=1), _row("b", 7.0, concurrency=2), _row("c", 8.0, concurrency=2)])
    (folder / "run.json").write_text(json.dumps({"command": "bench", "config": {"workload": {"name": "random"}}}))
    (folder / "summary.json").write_text(json.dumps({"levels": [_level(1), _level(2)]}))
    (run,) = load_runs(folder)
    by_label = {label: starts[0]["values"]["ttft_ms"] for (_, label), starts in run.levels.items()}
    assert by_label == {"C=1": [5.0], "C=2": [7.0, 8.0]}
