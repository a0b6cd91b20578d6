"""``seatrial experiment`` end to end with the synthetic server as the engine (it starts in about a
second): plans, fresh starts in ABBA order, decisions, A/A checks, failed starts, resume. The real-engine
proof is tests/experiment/test_experiment_vllm.py.

Some plans run the server through ``sh -c`` (``wrapped``): the shell reads which start folder its log
is in (the ``server*.log`` seatrial, its parent, holds open to copy its output into) and changes that one start, so that one chosen start fails or an A/A control
behaves differently from its twin, which a real engine does only by accident."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.clirun import invoke

from seatrial.errors import ConfigError
from seatrial.experiment import load_plan, run_experiment, schedule
from seatrial.experiment.plan import order_warnings
from seatrial.runs import read_jsonl

SERVER = [sys.executable, "-m", "seatrial.testing.server", "--port", "{port}", "--ttft-ms", "5"]


def wrapped(case: str) -> list[str]:
    """The synthetic server under a shell that applies ``case`` (sh ``case`` arms on the log's path)."""
    log = 'for f in /proc/$PPID/fd/*; do readlink "$f"; done | grep "/server[^/]*[.]log$" | tail -n 1'
    script = f'case "$({log})" in {case} esac; exec "$@"'
    return ["sh", "-c", script, "sh", *SERVER]


def plan_doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "serve": {"command": SERVER, "ready_timeout_s": 60, "stop_grace_s": 10},
        "baseline": {"name": "itl-4", "args": ["--itl-ms", "4"]},
        "treatments": [{"name": "itl-2", "args": ["--itl-ms", "2"]}, {"name": "itl-4-again", "args": ["--itl-ms", "4"]}],
        "workload": {"workload": "random", "input_len": 8, "output_len": 16, "concurrency": [4], "requests": 32,
                     "warmup": 2, "max_lag_ms": 200},
        "starts": 2,
        "decide": {"profiles": {"decode": {"concurrency": 4, "metric": "tpot_ms.p50", "min_gain_pct": 5},
                                "batch": {"concurrency": 4, "metric": "output_tok_s", "min_gain_pct": 5},
                                "tail": {"concurrency": 4, "metric": "ttft_ms.p99", "min_gain_pct": 5}},
                   "guardrails": [{"metric": "ttft_ms.p50", "margin_pct": 100}]},
    }  # fmt: skip
    doc.update(over)
    return doc


def write_plan(tmp: Path, doc: dict[str, Any]) -> Path:
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_plan_contract_is_validated_with_errors_naming_the_field(tmp_path: Path) -> None:
    bad = plan_doc(starts=1)
    with pytest.raises(ConfigError, match="starts: Input should be greater than or equal to 2"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc(bogus=1)
    with pytest.raises(ConfigError, match="bogus: Extra inputs are not permitted"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["serve"]["command"] = ["vllm", "serve", "/m"]
    with pytest.raises(ConfigError, match=r"serve.command: .*\{port\}"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["decide"]["profiles"]["batch"]["metric"] = "speed"
    with pytest.raises(ConfigError, match="unknown metric 'speed'"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["decide"]["profiles"]["batch"]["concurrency"] = 8
    with pytest.raises(ConfigError, match="concurrency 8 is not a workload level"):
        load_plan(write_plan(tmp_path, bad))
    default = plan_doc()
    del default["starts"]
    plan = load_plan(write_plan(tmp_path, default))
    assert plan.starts == 4 and plan.allow_failed_starts is False


def test_a_two_variable_treatment_is_refused_naming_both_differences(tmp_path: Path) -> None:
    doc = plan_doc(treatments=[{"name": "both", "args": ["--itl-ms", "2"], "env": {"VLLM_X": "1"}}])
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out")])
    assert result.code == 2 and not (tmp_path / "out").exists()
    assert "--itl-ms 4 -> 2" in result.output and "env VLLM_X: unset -> 1" in result.output
    assert load_plan(write_plan(tmp_path, {**doc, "allow_multi": True})).treatments[0].name == "both"


def test_interleaved_order_is_abba_and_random_order_is_blocked() -> None:
    plan = load_plan_from(plan_doc(starts=3))
    assert schedule(plan) == [
        ("itl-4", 0), ("itl-2", 0), ("itl-4-again", 0),
        ("itl-4-again", 1), ("itl-2", 1), ("itl-4", 1),
        ("itl-4", 2), ("itl-2", 2), ("itl-4-again", 2),
    ]  # fmt: skip
    assert order_warnings(plan) and "even number of starts" in order_warnings(plan)[0]
    assert order_warnings(load_plan_from(plan_doc(starts=4))) == []
    shuffled = schedule(load_plan_from(plan_doc(starts=6, order="random", seed=4)))
    assert sorted(shuffled) == sorted(schedule(load_plan_from(plan_doc(starts=6)))) and shuffled != schedule(
        load_plan_from(plan_doc(starts=6))
    )
    for k in range(6):  # every block holds each setting once, in its own order
        block = shuffled[3 * k : 3 * k + 3]
        assert sorted(n for n, _ in block) == ["itl-2", "itl-4", "itl-4-again"] and {i for _, i in block} == {
            k
        }


def load_plan_from(doc: dict[str, Any]) -> Any:
    from seatrial.experiment.plan import ExperimentPlan

    return ExperimentPlan.model_validate(doc)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("exp")
    plan = write_plan(tmp, plan_doc())
    result = invoke(["experiment", str(plan), "--out", str(tmp / "out"), "--json", str(tmp / "e.json")])
    assert result.code == 0, result.output
    return tmp / "out", json.loads((tmp / "e.json").read_text()), plan


def by(summary: dict[str, Any], profile: str) -> dict[str, dict[str, Any]]:
    return {d["treatment"]: d for d in summary["decisions"] if d["profile"] == profile}


def test_faster_tokens_are_adopted_and_the_aa_control_is_not(ran: tuple[Path, dict[str, Any], Path]) -> None:
    out, summary, _ = ran
    fast, aa = by(summary, "decode")["itl-2"], by(summary, "decode")["itl-4-again"]
    assert fast["verdict"] == "ADOPT", fast
    assert fast["ci_pct"][0] > fast["threshold_pct"] == fast["min_gain_pct"] == 5 and fast["gain_pct"] > 30
    assert (
        fast["method"] == "welch-log-per-start" and fast["holm"]["family"] == 2
    )  # decode, batch: tail is short
    assert fast["confidence"] == pytest.approx(1 - 2 * fast["holm"]["one_sided_alpha"])
    assert fast["guardrails"][0]["status"] == "NON_INFERIOR"
    assert fast["starts"] == {"baseline": 2, "treatment": 2} and fast["pooled_n"] == {
        "baseline": 64,
        "treatment": 64,
    }
    assert fast["power"]["label"] == "rough power estimate" and fast["power"]["sd_log_upper"] > fast["sd_log"]
    # throughput of a 0.3 s level on a shared host is noisy: the decision may stay open, never wrong
    tok = by(summary, "batch")["itl-2"]
    assert tok["method"] == "welch-log-per-start" and tok["verdict"] in ("ADOPT", "INCONCLUSIVE"), tok
    assert aa["aa_control"] is True and aa["verdict"] in ("NO_EFFECT", "INCONCLUSIVE"), aa
    checks = {(c["profile"], c["check"]): c for c in summary["aa_checks"]}
    assert checks[("decode", "itl-4-again")]["status"] == "OK"  # this check can fail: see the moved A/A below
    assert checks[("decode", "baseline halves")]["status"] == "UNCHECKED"  # 2 starts: 1+1 halves
    assert "Holm across the 2 " in summary["multiplicity"]
    drift = {d["profile"]: d for d in summary["drift"]}["decode"]
    assert (
        drift["slots"] == 6
        and drift["over_run_ci_pct"][0] <= drift["over_run_pct"] <= drift["over_run_ci_pct"][1]
    )
    assert json.loads((out / "summary.json").read_text()) == summary


def test_a_p99_from_few_requests_is_undecided_saying_how_many_would_do(
    ran: tuple[Path, dict[str, Any], Path],
) -> None:
    out, summary, _ = ran
    tail = by(summary, "tail")["itl-2"]
    assert tail["verdict"] == "INCONCLUSIVE" and tail["pooled_n"] == {"baseline": 64, "treatment": 64}
    assert "ttft_ms.p99 needs 1000 pooled requests per setting" in tail["reasons"][0]
    assert "(500 per start)" in tail["reasons"][0] and tail["holm"] is None
    assert "needs 1000 pooled requests" in (out / "report.html").read_text()


def test_every_start_is_a_fresh_server_measured_as_bench_measures(
    ran: tuple[Path, dict[str, Any], Path],
) -> None:
    out, summary, _ = ran
    settings = {s["name"]: s for s in summary["settings"]}
    assert [s["name"] for s in summary["settings"]] == ["itl-4", "itl-2", "itl-4-again"]
    for s in settings.values():
        assert [st["index"] for st in s["starts"]] == [0, 1]
        # start K of every setting: the experiment's seed + 1000 K (its prompts and arrivals, in its run.json;
        # its levels draw seed + level, so no level of one start replays one of the next)
        assert [st["seed"] for st in s["starts"]] == [summary["seed"], summary["seed"] + 1000]
        for st in s["starts"]:
            seeded = json.loads((out / st["folder"] / "run.json").read_text())["config"]["workload"]["seed"]
            assert seeded == st["seed"]
            folder = out / st["folder"]
            assert st["ok"] and st["startup_s"] > 0 and st["stop"]["signal"] == "SIGTERM"
            assert {"run.json", "requests.jsonl", "server_metrics.jsonl", "summary.json", "server.log"} <= {
                p.name for p in folder.iterdir()
            }
            assert [lv["concurrency"] for lv in st["levels"]] == [4] and st["levels"][0]["valid"]
            assert {r["level"] for r in read_jsonl(folder / "requests.jsonl")} == {st["levels"][0]["index"]}
    stats = settings["itl-4"]["levels"][0]["stats"]
    tok = stats["output_tok_s"]
    assert len(tok["per_start"]) == 2 and tok["geomean"] > 0 and tok["sd_log"] is not None
    ttft = stats["ttft_ms.p99"]
    assert ttft["pooled_n"] == 64 and ttft["within_start_sd"] is not None  # 2 starts x 32 requests, pooled
    assert ttft["geomean"] is None  # no mean of per-start percentiles is shown
    page = (out / "report.html").read_text()
    assert "Decisions" in page and "ADOPT" in page and page.count("<svg") >= 1
    assert "A/A checks" in page and "Drift: per-start values against run slot" in page and "Holm" in page
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "experiment" and run["config"]["plan_sha256"] == summary["plan_sha256"]


def test_compare_of_experiment_starts_uses_the_experiment_machinery(
    ran: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    out, _, _ = ran
    result = invoke(["compare", str(out), "--json", str(tmp_path / "c.json"), "--out", str(tmp_path / "cmp")])
    assert result.code == 0, result.output
    rows = json.loads((tmp_path / "c.json").read_text())["comparisons"]
    fast = {m["metric"]: m for r in rows if r["candidate"].endswith("/itl-2") for m in r["metrics"]}
    assert (
        fast["tpot_ms.p50"]["verdict"] == "IMPROVED"
        and fast["output_tok_s"]["method"] == "welch-log-per-start"
    )
    assert fast["output_tok_s"]["starts"] == [2, 2] and fast["output_tok_s"]["interval"] == "between starts"
    assert (
        fast["ttft_ms.p99"]["verdict"] == "INCONCLUSIVE" and "needs 1000" in fast["ttft_ms.p99"]["reasons"][0]
    )
    page = (tmp_path / "cmp" / "report.html").read_text()
    assert "<th>method</th>" in page and "welch-log-per-start" in page and "between starts" in page


def copy_run(out: Path, dest: Path) -> tuple[Path, dict[str, Any]]:
    shutil.copytree(out, dest)
    return dest, json.loads((dest / "summary.json").read_text())


def resume(plan: Path, folder: Path, summary: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    (folder / "summary.json").write_text(json.dumps(summary))
    result = invoke(["experiment", str(plan), "--out", str(folder), "--resume"])
    return result.code, json.loads((folder / "summary.json").read_text()), result.output


def test_starts_that_repeat_one_measurement_are_no_evidence(
    ran: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    """Each setting's second start made a copy of its first (a harness that wrote one measurement twice):
    no between-start spread, so no interval and no verdict, and ``compare`` says the same."""
    out, _, plan = ran
    folder, summary = copy_run(out, tmp_path / "copied")
    for s in summary["settings"]:
        first, second = s["starts"]
        shutil.copy(folder / first["folder"] / "requests.jsonl", folder / second["folder"] / "requests.jsonl")
        second["levels"] = first["levels"]
    code, summary, _ = resume(plan, folder, summary)
    assert code == 0
    fast = by(summary, "batch")["itl-2"]
    assert fast["verdict"] == "INCONCLUSIVE" and fast["ci_pct"] == [None, None] and fast["sd_log"] == 0
    assert "below the resolution 1e-4" in fast["reasons"][0]
    compared = invoke(["compare", str(folder), "--json", str(tmp_path / "c.json")])
    rows = json.loads((tmp_path / "c.json").read_text())["comparisons"]
    tok = next(
        m
        for r in rows
        if r["candidate"].endswith("/itl-2")
        for m in r["metrics"]
        if m["metric"] == "output_tok_s"
    )
    assert (
        compared.code == 0
        and tok["verdict"] == "INCONCLUSIVE"
        and "below the resolution" in tok["reasons"][0]
    )


def test_a_start_whose_client_stalled_is_left_out_of_latency_decisions(
    ran: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    """The field's stall (the client's loop 229 ms late at p99, max_lag_ms 200 here) written into the
    baseline's second start: its throughput still counts, its request timings do not, said so."""
    out, _, plan = ran
    folder, summary = copy_run(out, tmp_path / "stalled")
    base = next(s for s in summary["settings"] if s["name"] == "itl-4")
    base["starts"][1]["levels"][0]["client_timing"]["loop_lag_ms_p99"] = 229.0
    code, summary, _ = resume(plan, folder, summary)
    tok, fast = by(summary, "batch")["itl-2"], by(summary, "decode")["itl-2"]
    assert code == 0 and tok["starts"] == {"baseline": 2, "treatment": 2} and not tok["excluded"]
    assert fast["starts"] == {"baseline": 1, "treatment": 2} and fast["verdict"] == "INCONCLUSIVE"
    stalled = (
        "start 2 left out of tpot_ms.p50: client stalled: event loop 229 ms late at p99 (> max_lag_ms 200)"
    )
    assert (
        fast["excluded"] == [stalled] and "1+2 starts: an interval needs 2 starts a side" in fast["reasons"]
    )
    guard = tok["guardrails"][0]
    assert guard["status"] == "UNDECIDED" and guard["starts"] == [1, 2]
    assert any("start 2 left out of ttft_ms.p50: client stalled" in r for r in guard["reasons"])
    base = next(s for s in summary["settings"] if s["name"] == "itl-4")
    assert base["levels"][0]["stalled_starts"] == [1]


def test_an_aa_control_that_moved_makes_the_profile_invalid(tmp_path: Path) -> None:
    """The A/A control runs at ITL 8 ms instead of 4 (its shell adds a flag): identical settings that
    differ. Every decision of the profile is INVALID, exit 1, and the report says so first."""
    doc = plan_doc()
    doc["serve"]["command"] = wrapped('*/itl-4-again/*) set -- "$@" --itl-ms 8;;')
    doc["decide"]["profiles"] = {"batch": {"concurrency": 4, "metric": "tpot_ms.p50", "min_gain_pct": 5}}
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out"),
                     "--json", str(tmp_path / "e.json")])  # fmt: skip
    summary = json.loads((tmp_path / "e.json").read_text())
    assert result.code == 1 and "INVALID batch: A/A check itl-4-again" in result.output, result.output
    assert {d["verdict"] for d in summary["decisions"]} == {"INVALID"}
    check = next(c for c in summary["aa_checks"] if c["check"] == "itl-4-again")
    assert check["status"] in ("MOVED", "LEAVES_MIN_GAIN") and check["gain_pct"] < -30, check
    fast = by(summary, "batch")["itl-2"]
    assert fast["ci_pct"][0] > 5 and fast["invalid"][0].startswith(
        "A/A check itl-4-again"
    )  # it would have been ADOPT
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index("INVALID: an A/A check failed") < page.index("Decisions")


def test_failed_starts_cap_a_setting_and_a_broken_one_is_retried(tmp_path: Path) -> None:
    """itl-2-flaky's second start cannot come up (its shell exits), broken never comes up (a flag the
    server does not know): both are recorded, retried once, and named; flaky's two good starts would
    have been adopted, but a setting with a failed start is at most INCONCLUSIVE."""
    doc = plan_doc(
        treatments=[{"name": "itl-2-flaky", "args": ["--itl-ms", "2"]},
                    {"name": "broken", "args": ["--itl-ms", "4", "--no-such-flag"]}],
        decide={"profiles": {"batch": {"concurrency": 4, "metric": "tpot_ms.p50"}}}, starts=3,
    )  # fmt: skip
    doc["serve"]["command"] = wrapped("*/itl-2-flaky/start-2/*) echo made to fail here; exit 3;;")
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out")])
    assert result.code == 5 and "no start of broken came up" in result.output
    assert "warning: starts: 3 with interleaved (ABBA) order" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    broken = next(s for s in summary["settings"] if s["name"] == "broken")
    for st in broken["starts"]:
        assert st["ok"] is False and len(st["attempts"]) == 2  # tried, then once more
        assert "exited with 2 during start-up" in st["attempts"][0]["error"]
        assert "unrecognized arguments: --no-such-flag" in st["attempts"][0]["error"]  # the log's tail
    assert summary["failed_settings"] == ["broken"]
    flaky, dead = by(summary, "batch")["itl-2-flaky"], by(summary, "batch")["broken"]
    assert flaky["starts"] == {"baseline": 3, "treatment": 2} and flaky["ci_pct"][0] > 5
    assert flaky["verdict"] == "INCONCLUSIVE" and flaky["failed_starts"] == [
        "itl-2-flaky start 2: did not come up (2 attempts)"
    ]
    assert "allow_failed_starts: true" in flaky["reasons"][0] and dead["verdict"] == "INCONCLUSIVE"
    assert [(f["setting"], f["start"]) for f in summary["failed_starts"]] == [
        ("itl-2-flaky", 1), ("broken", 0), ("broken", 1), ("broken", 2)
    ]  # fmt: skip
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.index("Failed starts") < page.index("Decisions") and "itl-2-flaky start 2" in page


def test_an_interrupted_plan_is_readable_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    doc = plan_doc(treatments=[{"name": "itl-2", "args": ["--itl-ms", "2"]}])
    plan = load_plan(write_plan(tmp_path, doc))
    out = tmp_path / "out"
    seen: list[str] = []

    def interrupt_at_the_third_start(line: str) -> None:
        seen.append(line)
        if line.startswith("[3/4]"):
            raise KeyboardInterrupt

    from seatrial.errors import RunInterrupted

    with pytest.raises(RunInterrupted, match="--resume"):
        run_experiment(plan, out, log=interrupt_at_the_third_start)
    partial = json.loads((out / "summary.json").read_text())
    assert partial["interrupted"] is True and partial["complete"] is False
    assert sum(len(s["starts"]) for s in partial["settings"]) == 2
    with pytest.raises(ConfigError, match="not empty; pass --resume"):
        run_experiment(plan, out, log=lambda m: None)
    resumed: list[str] = []
    summary = run_experiment(plan, out, log=resumed.append, resume=True).to_json()
    assert summary["complete"] and [line for line in resumed if line.startswith("[")] == [
        "[3/4] itl-2 start 2 of 2",
        "[4/4] itl-4 start 2 of 2",
    ]
    assert all(len(s["starts"]) == 2 for s in summary["settings"])
    other = load_plan(write_plan(tmp_path, plan_doc()))
    with pytest.raises(ConfigError, match="another plan"):
        run_experiment(other, out, log=lambda m: None, resume=True)


def test_a_plan_asking_for_spans_serves_every_start_with_them_and_checks_the_plan(tmp_path: Path) -> None:
    """workload.otlp_listen: one receiver for the whole experiment, every start served with
    --otlp-traces-endpoint pointing at it (the synthetic server takes vLLM's flag); --plan checks every start's
    KV capacity; --disable-log-stats beside spans is refused."""
    from tests.load.test_plancheck import make_plan

    from seatrial.server.process import free_port

    doc = plan_doc(starts=2, treatments=[{"name": "itl-2", "args": ["--itl-ms", "2"]}])
    doc["serve"]["command"] += ["--kv-cache-tokens", "1048576"]
    doc["workload"] |= {"otlp_listen": f"127.0.0.1:{free_port()}", "otlp_flush_s": 5, "gpu_telemetry": False}
    path = write_plan(tmp_path, doc)
    out = invoke(["experiment", str(path), "--out", str(tmp_path / "run"), "--plan", str(make_plan(tmp_path, 1.0))])
    assert out.code == 0, out.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    starts = [st for s in summary["settings"] for st in s["starts"]]
    assert len(starts) == 4 and all(st["plan_check"]["verdict"] == "PASS" for st in starts)
    n = doc["workload"]["requests"]  # every measured request of every start joined to its span
    assert all(st["spans"]["joined"] == n and st["spans"]["unmatched"] == 0 for st in starts)
    assert all(st["levels"][0]["server_timing"]["joined"] == n for st in starts)
    doc["baseline"]["args"] = ["--itl-ms", "4", "--disable-log-stats"]
    doc["treatments"][0]["args"] = ["--itl-ms", "2", "--disable-log-stats"]
    with pytest.raises(ConfigError, match="--disable-log-stats"):
        load_plan(write_plan(tmp_path, doc))


def test_more_slots_carry_more_load_within_the_slo_and_the_capacity_profile_adopts_it(tmp_path: Path) -> None:
    """Issue 23: ``metric: capacity`` runs the capacity search on every start and decides on the capacities
    (one per start, Welch on the logs). 1 slot against 8 of a 10-token request (~50 ms a slot): eight
    times the users fit within a TTFT bound that no request waiting for a slot meets. (2 slots against 8
    came out INCONCLUSIVE once in a slow run: with 2 starts a side, Welch has about 2 degrees of freedom,
    and searches that found 2 and 3, 7 and 10 left the lower bound under 20%.) The searches start at 8 users:
eight slots then meet there and bisect above it, and a stalled probe at 2 or 4 users cannot cut their
search short; one slot halves its way down to the 1 user it holds. Every request of 8 users in 8 slots meets the bound,
but their shared queue makes 48 of them worth about 12 independent ones, and a second look is at 98.75%
(alpha spending): up to 192 requests a probe let the looks decide."""
    doc = plan_doc(
        baseline={"name": "slots-1", "args": ["--itl-ms", "5", "--slots", "1"]},
        treatments=[{"name": "slots-8", "args": ["--itl-ms", "5", "--slots", "8"]}],
        decide={"profiles": {"capacity": {"metric": "capacity", "min_gain_pct": 20, "capacity": {
            "slo": "ttft_ms:30", "attainment": 0.8, "mode": "concurrency", "start": 8, "probe_requests": 48,
            "max_probe_requests": 192, "max_rate": 16}}}},
    )  # fmt: skip
    doc["workload"] |= {"output_len": 10, "requests": 16}
    out = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "run")])
    assert out.code == 0, out.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    (d,) = summary["decisions"]
    assert d["metric"] == "capacity" and d["method"] == "welch-log-per-start+bracket" and d["verdict"] == "ADOPT", d
    found = {s["name"]: [st["capacity"]["capacity"]["value"] for st in s["starts"]] for s in summary["settings"]}
    assert all(v == 1 for v in found["slots-1"]) and all(7 <= v <= 10 for v in found["slots-8"]), found
    assert d["ci_pct"][0] > 20 and d["starts"] == {"baseline": 2, "treatment": 2}
    for s in summary["settings"]:
        for st in s["starts"]:
            assert (tmp_path / "run" / st["folder"] / "capacity-capacity" / "summary.json").is_file()
    assert "capacity:capacity per setting and level" in (tmp_path / "run" / "report.html").read_text()


def test_a_slower_treatment_is_rejected_end_to_end(tmp_path: Path) -> None:
    """Catches a REJECT that never fires through the whole path (bench levels -> per-start values ->
    decision -> summary): a server three times slower per token is REJECT, never ADOPT or INCONCLUSIVE."""
    doc = plan_doc(
        baseline={"name": "itl-2", "args": ["--itl-ms", "2"]},
        treatments=[{"name": "itl-6", "args": ["--itl-ms", "6"]}],
        decide={"profiles": {"decode": {"concurrency": 4, "metric": "tpot_ms.p50", "min_gain_pct": 5}}},
    )
    doc["workload"]["requests"] = 16
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out"),
                     "--json", str(tmp_path / "e.json")])  # fmt: skip
    assert result.code == 0, result.output
    (row,) = json.loads((tmp_path / "e.json").read_text())["decisions"]
    assert row["verdict"] == "REJECT", row
    assert row["ci_pct"][1] < -5 and row["gain_pct"] < -40 and row["starts"] == {"baseline": 2, "treatment": 2}
    assert "REJECT" in (tmp_path / "out" / "report.html").read_text()
