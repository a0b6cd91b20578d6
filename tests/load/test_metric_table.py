"""One metric table (issue 44 item 2): bench's level figures, the experiment's metrics and directions, the
request values compare and experiment decide from, and goodput's SLO all read it, so they cannot drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seatrial.experiment.plan import check_metric
from seatrial.experiment.sources import level_values
from seatrial.load.goodput import is_good, parse_slo
from seatrial.load.metric_table import (
    DISTRIBUTIONS,
    LEVEL_METRICS,
    METRICS,
    REQUEST_METRICS,
    SLO_METRICS,
    lower_is_better,
)
from seatrial.load.metrics import level_metrics
from seatrial.load.records import RequestRecord
from seatrial.stats import distribution


def _records() -> list[RequestRecord]:
    """Three ok requests, one of them with no output-token count, one with an answer after reasoning."""
    return [
        RequestRecord(request_id="L0-0", phase="measure", concurrency=2, level=0, prompt_tokens=8,
                      output_tokens=5, ttft_ms=40.0, ttfa_ms=90.0, last_token_ms=200.0, e2e_ms=210.0,
                      itl_ms=[40.0, 40.0, 40.0, 40.0], send_ns=0),
        RequestRecord(request_id="L0-1", phase="measure", concurrency=2, level=0, prompt_tokens=8,
                      output_tokens=3, ttft_ms=60.0, ttfa_ms=60.0, last_token_ms=100.0, e2e_ms=120.0,
                      itl_ms=[20.0, 20.0], send_ns=10**8),
        RequestRecord(request_id="L0-2", phase="measure", concurrency=2, level=0, prompt_tokens=8,
                      output_tokens=None, ttft_ms=30.0, last_token_ms=30.0, e2e_ms=50.0, itl_ms=[],
                      send_ns=2 * 10**8),
    ]  # fmt: skip


def test_every_metric_of_the_table_is_a_figure_of_a_bench_level() -> None:
    m = level_metrics(_records())
    assert set(METRICS) <= set(m)
    for name in DISTRIBUTIONS:
        assert set(m[name]) >= {"mean", "p50", "p99"}, name
    assert m["ttfa_ms"] == distribution([90.0, 60.0])  # the request without an answer token is left out
    assert m["itl_ms"] == distribution([40.0] * 4 + [20.0] * 2)  # every gap, not a value per request


def test_the_experiment_decides_from_the_same_request_values_bench_summarised(tmp_path: Path) -> None:
    """A requests.jsonl row read back gives every request metric the level's figure was made of: the mean
    of per-user speeds is bench's per_user_output_tok_s (a request without a count saw 0 tok/s in both),
    and ttfa_ms is there to decide on."""
    records = _records()
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    values = level_values(tmp_path, {"index": 0, "concurrency": 2})
    assert set(values) == set(REQUEST_METRICS)
    bench = level_metrics(records)
    assert sum(values["per_user_output_tok_s"]) / 3 == pytest.approx(bench["per_user_output_tok_s"])
    assert values["ttfa_ms"] == [90.0, 60.0]
    assert values["itl_ms"] == [[40.0] * 4, [20.0] * 2, []]
    assert values["tpot_ms"] == [40.0, 20.0]  # fewer than two tokens: no TPOT


def test_every_request_metric_is_an_experiment_metric_and_its_direction_comes_from_the_table() -> None:
    for name in REQUEST_METRICS:
        assert check_metric(f"{name}.p99") == f"{name}.p99"
        assert lower_is_better(f"{name}.p99") is not METRICS[name].higher_is_better
    for name in LEVEL_METRICS:
        assert check_metric(name) == name and not lower_is_better(name)
    assert lower_is_better("ttfa_ms.p50") and not lower_is_better("per_user_output_tok_s.p50")
    assert all(m.higher_is_better is (m.unit != "ms") for m in METRICS.values())  # times lower, rates higher
    with pytest.raises(ValueError, match="unknown metric"):
        check_metric("ttfa_ms.p42")


def test_a_good_request_is_bounded_by_the_slo_metrics_of_the_table() -> None:
    assert parse_slo(",".join(f"{n}:100" for n in SLO_METRICS)) == dict.fromkeys(SLO_METRICS, 100.0)
    with pytest.raises(ValueError, match="unknown SLO metric 'itl_ms'"):
        parse_slo("itl_ms:10")
    fast, slow, one_token = _records()[1], _records()[0], _records()[2]
    assert is_good(fast, {"tpot_ms": 25.0}) and not is_good(slow, {"tpot_ms": 25.0})
    assert is_good(one_token, {"tpot_ms": 1.0})  # no TPOT: the bound is met, as vLLM counts it
    assert not is_good(fast, {"e2e_ms": 100.0}) and is_good(fast, {"e2e_ms": 120.0})


def test_a_bench_level_summary_has_a_typed_field_for_every_metric_of_the_table() -> None:
    """A metric added to the table and not to LevelSummary would be refused when a summary is read back."""
    from seatrial.runs.summaries.bench import Distribution, LevelSummary

    fields = LevelSummary.model_fields
    for m in METRICS.values():
        assert m.name in fields, m.name
        want = Distribution if m.summary == "distribution" else float | None
        assert fields[m.name].annotation == want, m.name
