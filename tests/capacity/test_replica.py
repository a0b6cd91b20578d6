"""A capacity a fresh replica holds (issue 38 item 6): a lower prediction bound over fresh starts' searches,
a start that found nothing never dropped; ``capacity --serve --starts`` on real starts of the synthetic
server, each with its own seed and folder."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.clirun import invoke

from seatrial.capacity.replica import StartCapacity, replica_bound


def test_the_bound_holds_a_fresh_start_at_its_confidence_and_the_mean_would_not() -> None:
    # 8% start-to-start spread (log-normal), 3 starts: the bound at 95% is at or below a fresh start's
    # capacity in ~95% of trials; a bound on the mean (no sqrt(1 + 1/n)) would be in ~86%
    rng = np.random.default_rng(3)
    trials, held = 4000, 0
    for _ in range(trials):
        caps = np.exp(rng.normal(math.log(40.0), 0.08, 4))
        bound = replica_bound([StartCapacity(float(c), 1.0) for c in caps[:3]], 0.95)
        held += bound.value is not None and bound.value <= caps[3]
    assert 0.93 <= held / trials <= 0.97, held / trials


def test_a_start_that_found_nothing_is_below_its_lowest_probe_and_one_start_is_labelled() -> None:
    none = replica_bound([StartCapacity(12.0, 1.0), StartCapacity(None, 0.5), StartCapacity(11.0, 1.0)], 0.95)
    assert none.value is None and none.below == 0.5 and "1 of 3 starts found no capacity" in none.method
    one = replica_bound([StartCapacity(12.0, 1.0)], 0.95)
    assert one.value == 12.0 and one.method == "one start"
    same = replica_bound([StartCapacity(8.0, 1.0)] * 3, 0.95)  # no spread: the starts' own figure
    assert same.value == pytest.approx(8.0)


SERVER = f"{sys.executable} -m seatrial.testing.server --port {{port}} --ttft-ms 5 --itl-ms 5 --slots 4"
ARGS = ["--input-len", "8", "--output-len", "10", "--attainment", "0.8", "--mode", "concurrency",
        "--probe-requests", "40", "--max-probe-requests", "80", "--max-lag-ms", "500"]  # fmt: skip


def test_capacity_over_fresh_starts_searches_each_with_its_own_seed_and_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = invoke(["capacity", "--serve", SERVER, "--starts", "2", "--slo", "ttft_ms:30", "--start", "4", "--seed", "7", *ARGS,
                "--out", str(out), "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert r.code == 0, r.output
    s = json.loads((tmp_path / "r.json").read_text())
    assert s == json.loads((out / "summary.json").read_text()) and s["label"] == "2 fresh starts"
    assert [st["seed"] for st in s["starts"]] == [7, 1007] and all(st["error"] is None for st in s["starts"])
    caps = [st["capacity"] for st in s["starts"]]
    assert all(3 <= c <= 5 for c in caps) and s["capacity"] is not None and s["capacity"] <= min(caps), s
    for st in s["starts"]:  # each start: its server's log and a whole capacity run folder of its own
        one = json.loads((out / st["folder"] / "summary.json").read_text())
        assert one["capacity"]["concurrency"] == st["capacity"] and (out / st["folder"] / "server.log").is_file()
        assert json.loads((out / st["folder"] / "run.json").read_text())["config"]["bench"]["workload"]["seed"] == st["seed"]
    assert "capacity of a fresh replica" in r.output
    page = (out / "report.html").read_text()  # the replica's bound, each start's row, then each start's own page
    assert "Capacity of a fresh replica: " in page and page.count("<h2>Start ") == 2 and f"<td>{s['starts'][1]['seed']}</td>" in page
    assert page.count("SLO attainment against load") == 2


def test_a_start_that_found_no_capacity_makes_the_replica_below_its_floor(tmp_path: Path) -> None:
    r = invoke(["capacity", "--serve", SERVER, "--starts", "2", "--slo", "ttft_ms:1", *ARGS,
                "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert r.code == 1, r.output
    s = json.loads((tmp_path / "r.json").read_text())
    assert s["capacity"] is None and s["below"] == 1 and all(st["capacity"] is None for st in s["starts"])
    assert "below 1 users" in r.output


def test_serve_and_url_and_starts_are_checked() -> None:
    base = ["capacity", "--slo", "ttft_ms:30"]
    assert invoke([*base, "--serve", "python -m x --port 8000"]).code == 2  # no {port}
    assert invoke([*base, "--serve", SERVER, "--url", "http://127.0.0.1:9"]).code == 2
    assert invoke([*base, "--url", "http://127.0.0.1:9", "--starts", "2"]).code == 2
    assert invoke(base).code == 2


def test_a_serve_file_starts_each_server_as_experiment_does_env_and_guard_included(tmp_path: Path) -> None:
    """``--serve-file``: experiment's ``serve:`` block. The command only comes up with the file's env (a missing
    variable ends the start), under ``seatrial guard`` (its history in the run folder), at the file's nice; the
    env's values stay out of the run folder."""
    needs_env = ["sh", "-c", f"test ${{#SEATRIAL_CAP_ENV}} -eq 6 && exec {SERVER}"]  # the value itself not written
    serve = {"command": needs_env, "env": {"SEATRIAL_CAP_ENV": "s3cr3t"}, "nice": 5, "stop_grace_s": 40,
             "guard": {"min_available_gib": 0.25, "stop_grace": "10s"}}  # fmt: skip
    path = tmp_path / "serve.yaml"
    path.write_text(json.dumps(serve))
    out = tmp_path / "run"
    r = invoke(["capacity", "--serve-file", str(path), "--slo", "ttft_ms:30", "--start", "4", *ARGS,
                "--out", str(out), "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert r.code == 0, r.output
    s = json.loads((tmp_path / "r.json").read_text())
    assert s["label"] == "one start" and 3 <= s["starts"][0]["capacity"] <= 5, s
    history = [json.loads(line) for line in (out / "guard-history.jsonl").read_text().splitlines()]
    assert any(e.get("event") == "start" for e in history), history
    assert "s3cr3t" not in "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert json.loads((out / "run.json").read_text())["config"]["serve_env"] == ["SEATRIAL_CAP_ENV"]
    serve.pop("env")
    path.write_text(json.dumps(serve))
    r = invoke(["capacity", "--serve-file", str(path), "--slo", "ttft_ms:30", *ARGS, "--out", str(tmp_path / "r2")])
    assert r.code == 1 and "exited" in r.output, r.output  # without its env the server does not come up
    assert invoke(["capacity", "--serve-file", str(path), "--slo", "ttft_ms:30"]).code == 2  # a guard needs --out
    path.write_text("command: [x]\n")
    assert invoke(["capacity", "--serve-file", str(path), "--slo", "ttft_ms:30"]).code == 2  # no {port}
