#!/usr/bin/env python3
"""Do the tests fail when the product breaks? (issue 42 item 23)

Copies the tree's ``src/``, ``tests/`` and ``pyproject.toml`` to a temporary folder, checks that the chosen
engine-free tests pass there unchanged, then applies each mutation below alone (an exact text replacement
in one file, which must match exactly once: a mutation that no longer applies is an error, never a silent
pass) and runs the tests of the folders it concerns. A mutation is caught when pytest reports failed
tests (exit 1); anything else (it passed, or pytest could not even collect) is a survivor. One line per
mutation; the exit status is 0 when every mutation is caught, 1 when one survived, 2 when the unchanged
tree fails its own tests or a mutation no longer applies.

Usage: python scripts/mutation_check.py [--python PY] [--only NAME]   (run from anywhere in the tree)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # under src/seatrial/
    old: str
    new: str
    tests: tuple[str, ...]  # pytest node ids or files under tests/


MUTATIONS = (
    Mutation(
        "REJECT never fires",
        "experiment/decide.py",
        '    if hi < -threshold:\n        return "REJECT"',
        '    if hi < -threshold:\n        return "INCONCLUSIVE"',
        ("tests/experiment/test_decide.py",),
    ),
    Mutation(
        "a guardrail's WORSE is not obeyed",
        "experiment/decide.py",
        '    if any(g["status"] == "WORSE" for g in guards):\n        return "REJECT"',
        '    if any(g["status"] == "WORSE" for g in guards) and False:\n        return "REJECT"',
        ("tests/experiment/test_decide.py",),
    ),
    Mutation(
        "TTFT's direction flipped in the metric table",
        "load/metric_table.py",
        'MetricDef("ttft_ms", "ms", False,',
        'MetricDef("ttft_ms", "ms", True,',
        ("tests/load/test_metric_table.py",),
    ),
    Mutation(
        "compare never says REGRESSED",
        "compare/runs.py",
        '    if hi < -threshold:\n        return "REGRESSED"',
        '    if hi < -threshold:\n        return "INCONCLUSIVE"',
        ("tests/compare/test_compare.py::test_a_slower_candidate_with_starts_on_both_sides_is_regressed",),
    ),
    Mutation(
        "TTFT p50/p99 swapped in the levels table",
        "runs/levels.py",
        "num(ttft.p50), num(ttft.p99)",
        "num(ttft.p99), num(ttft.p50)",
        ("tests/report/test_report_numbers.py",),
    ),
    Mutation(
        "TTFT p50/p99 swapped in the report's plot",
        "report/sections/bench.py",
        'lv.figure(f"ttft_ms.{p}")',
        "lv.figure(f\"ttft_ms.{ {'p50': 'p99', 'p99': 'p50'}.get(p, p) }\")",
        ("tests/report/test_report_numbers.py",),
    ),
    Mutation(
        "GPU telemetry at half its rate",
        "load/gpu_telemetry.py",
        "HZ = 10.0",
        "HZ = 5.0",
        ("tests/load/test_gpu_telemetry.py::test_the_watch_samples_each_gpu_at_10_hz_through_nvml",),
    ),
    Mutation(
        "GPU telemetry sampler waits twice its interval",
        "hw/telemetry.py",
        "k = max(k + 1, int(now_s / self._interval_s) + 1)",
        "k = max(k + 2, int(now_s / self._interval_s) + 2)",
        ("tests/load/test_gpu_telemetry.py::test_the_watch_samples_each_gpu_at_10_hz_through_nvml",),
    ),
    Mutation(
        "a FIN's reset not waited for (a request llama-server never read counted as dropped)",
        "load/reuse.py",
        "RESET_WAIT_S = 0.25",
        "RESET_WAIT_S = 0.0",
        ("tests/load/test_reuse.py::test_a_fin_that_acknowledged_an_unread_request_waits_for_its_reset",),
    ),
    Mutation(
        "the synthetic engine admits whatever waits when its loop wakes",
        "testing/batching.py",
        " and self.waiting[0].arrived <= end:",
        ":",
        ("tests/server/test_batching.py::test_the_engine_admits_on_the_laws_clock_though_its_loop_wakes_late",),
    ),
    Mutation(
        "a late open loop (5 ms before each send)",
        "load/scheduler.py",
        "    if delay > 0:\n        await asyncio.sleep(delay)",
        "    await asyncio.sleep(max(0.0, delay) + 0.005)",
        ("tests/load/test_arrivals.py",),
    ),
    Mutation(
        "a late open loop hidden in its own stamps (due times shifted 5 ms)",
        "load/scheduler.py",
        "due = [t0 + int(off * 1e9) for off in offsets]",
        "due = [t0 + int(off * 1e9) + 5_000_000 for off in offsets]",
        ("tests/load/test_arrivals.py",),
    ),
    Mutation(
        "a child's port taken from the ephemeral range",
        "server/process.py",
        "    for _ in range(tries if high > QUIET_LOWEST else 0):",
        "    for _ in range(0):",
        ("tests/server/test_ports.py::test_a_childs_port_lies_below_the_ephemeral_range_where_no_bind_0_can_take_it",),
    ),
    Mutation(
        "capacity judged on the bracket's midpoint",
        "capacity/run.py",
        "rate_req_s=search.lower if rate else None,",
        "rate_req_s=(search.lower + search.upper) / 2 if rate and search.lower and search.upper else search.lower,",
        ("tests/capacity/test_search.py",),
    ),
    Mutation(
        "float flags take NaN and infinity",
        "cli/group.py",
        "        if isinstance(number, float) and not math.isfinite(number):",
        "        if isinstance(number, float) and not math.isfinite(number) and False:",
        ("tests/cli/test_inputs.py::test_every_float_flag_refuses_nan_and_infinity",),
    ),
    Mutation(
        "a trace replay's length unchecked",
        "load/workloads/replay.py",
        "    if span_s > MAX_REPLAY_S:",
        "    if span_s > MAX_REPLAY_S and False:",
        ("tests/load/test_traces.py",),
    ),
    Mutation(
        "convert checks its edits only after DST is written",
        "checkpoint/convert/run.py",
        "        edited_config(source, opts, lm_head.weight.entry.name if lm_head else None)  # its errors before DST\n",
        "",
        ("tests/convert/test_errors_cli.py",),
    ),
    Mutation(
        "an open loop's attainment judged as independent requests",
        "stats/proportions.py",
        "    return per * max(in_flight - 1.0, 0.0)",
        "    return 1.0",
        ("tests/capacity/test_probe_intervals.py",),
    ),
    Mutation(
        "a probe's next run ignores its design effect",
        "capacity/looks.py",
        "        need = math.ceil(self.first * self.judged.share.deff * grow) - self.used",
        "        need = self.first",
        ("tests/capacity/test_probe_intervals.py",),
    ),
    Mutation(
        "a probe's looks all at the plain confidence (no alpha spending)",
        "capacity/looks.py",
        "    return 1 - (1 - confidence) / 2**look",
        "    return confidence",
        ("tests/capacity/test_probe_intervals.py",),
    ),
    Mutation(
        "the client keeps reusing connections a server closes after each response",
        "load/reuse.py",
        "            self.fresh_only = True",
        "            pass",
        ("tests/load/test_reuse.py::test_a_server_that_closes_after_each_response_gets_a_new_connection_each_time",),
    ),
    Mutation(
        "a replica's bound over starts is a bound on their mean (no prediction)",
        "capacity/replica.py",
        "math.sqrt(1 + 1 / n)",
        "math.sqrt(1 / n)",
        ("tests/capacity/test_replica.py::test_the_bound_holds_a_fresh_start_at_its_confidence_and_the_mean_would_not",),
    ),
    Mutation(
        "a start that found no capacity is dropped",
        "capacity/replica.py",
        "    missed = [s.lowest for s in starts if s.found is None]",
        "    missed: list[float] = []",
        ("tests/capacity/test_replica.py::test_a_start_that_found_nothing_is_below_its_lowest_probe_and_one_start_is_labelled",),
    ),
    Mutation(
        "a run shorter than 10x what it held in flight may MEET",
        "capacity/looks.py",
        '        elif self.short and judged.verdict == "MEETS":',
        "        elif False:",
        ("tests/capacity/test_probe_length.py",),
    ),
    Mutation(
        "the in-flight forecast scales a probe that missed",
        "capacity/run.py",
        ' and p.verdict == "MEETS"]',
        "]",
        ("tests/capacity/test_probe_length.py",),
    ),
    Mutation(
        "every start of an experiment replays the same seed",
        "experiment/run.py",
        "self.measure(server, folder, start_seed(self.seed, k))",
        "self.measure(server, folder, self.seed)",
        ("tests/experiment/test_experiment_synthetic.py::test_every_start_is_a_fresh_server_measured_as_bench_measures",),
    ),
    Mutation(
        "a level drains: no cool-down",
        "load/scheduler.py",
        "    if level.timed or level.ramp is not None or measured < 1:",
        "    if True:",
        ("tests/load/test_cooldown.py",),
    ),
    Mutation(
        "a level's window keeps the warm-up's transient",
        "load/window.py",
        "    front = timed[t.cut] if t.cut else 0",
        "    front = 0",
        ("tests/load/test_window.py::test_a_transient_moves_to_the_warm_up_in_send_order",),
    ),
    Mutation(
        "a capacity probe keeps its transient in its figures",
        "capacity/run.py",
        "self.folder, self.progress, pool, True)",
        "self.folder, self.progress, pool, False)",
        ("tests/load/test_window.py::test_a_capacity_probe_cuts_its_transient_and_misses_an_overloaded_rate_at_once",),
    ),
    Mutation(
        "a queue that keeps growing is never called overloaded",
        "load/window.py",
        "        overloaded=open_loop and t.rising,",
        "        overloaded=False,",
        ("tests/load/test_window.py::test_few_requests_cut_nothing_and_only_an_open_loop_is_overloaded",),
    ),
    Mutation(
        "net.nccl passes a wrong collective result",
        "io/nccl.py",
        "    if wrong:",
        "    if False:",
        ("tests/io_trials/test_ray.py",),
    ),
    Mutation(
        "experiment drops a start whose capacity search found nothing",
        "experiment/decide.py",
        "    if prof.capacity is not None and (out_a or out_b):",
        "    if False:",
        ("tests/experiment/test_decide.py::test_a_start_whose_capacity_search_found_nothing_is_not_dropped",),
    ),
    Mutation(
        "an overloaded probe is judged by its share",
        "capacity/looks.py",
        "        if self.overloaded:",
        "        if False:",
        ("tests/capacity/test_probe_intervals.py::test_an_overloaded_run_misses_at_once_whatever_its_share",),
    ),
    Mutation(
        "the trial's diagnosis suspects a GPU trial that was not measured (fp4 UNSUPPORTED on Hopper)",
        "trial/diagnosis.py",
        "if v in BLOCKING}",
        'if v != "PASS"}',
        ("tests/trial/test_diagnosis.py",),
    ),
    Mutation(
        "a trial plan's capacity stage is not judged by capacity's rules until stage 5",
        "trial/plan.py",
        '            CapacityConfig(slo={"ttft_ms": 1.0}, **self.model_dump(exclude={"starts"}))',
        "            pass",
        ("tests/trial/test_plan.py::test_a_bad_plan_is_exit_2_naming_the_key_before_any_folder",),
    ),
    Mutation(
        "capacity's limit is read at the first load above the capacity, though every request there held the SLO",
        "capacity/limits.py",
        "    broken = [p for p in above if _kv_pressed(p) or _fell_short(p, target)]",
        "    broken = above",
        ("tests/capacity/test_limits.py",),
    ),
    Mutation(
        "the trial's diagnosis names an accept trial the engine does not support as a serving symptom",
        "trial/diagnosis.py",
        "            if t.verdict not in BLOCKING:",
        '            if t.verdict in ("PASS", "UNAVAILABLE"):',
        ("tests/trial/test_diagnosis.py",),
    ),
)


def copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(ROOT / "src", dest / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", dest / "benchmarks", ignore=ignore)  # tests import its simulations
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def pytest(python: str, tree: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [python, "-m", "pytest", "-m", "not engine", "-x", "-q", "-p", "no:cacheprovider", *tests]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"), help="the venv's python")
    ap.add_argument("--only", help="run only the mutation whose name contains this")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or args.only in m.name]
    if not chosen:
        print(f"ERROR  no mutation's name contains {args.only!r}")
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="seatrial-mutants-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        for m in chosen:  # every mutation must still apply to today's code
            if (tree / "src/seatrial" / m.path).read_text().count(m.old) != 1:
                print(f"ERROR  {m.name}: its text is not found exactly once in src/seatrial/{m.path}")
                return 2
        tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        rc, last = pytest(args.python, tree, tests)
        if rc != 0:
            print(f"ERROR  the unchanged tree fails its tests (pytest exit {rc}): {last}")
            return 2
        survivors = 0
        for m in chosen:
            target = tree / "src/seatrial" / m.path
            original = target.read_text()
            target.write_text(original.replace(m.old, m.new))
            try:
                t = time.monotonic()
                rc, last = pytest(args.python, tree, m.tests)
            finally:
                target.write_text(original)
            caught = rc == 1
            survivors += not caught
            verdict = "caught  " if caught else "SURVIVED"
            print(f"{verdict} {m.name} ({time.monotonic() - t:.1f} s; pytest exit {rc}: {last})", flush=True)
    print(f"{len(chosen) - survivors}/{len(chosen)} mutations caught in {time.monotonic() - started:.0f} s")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
