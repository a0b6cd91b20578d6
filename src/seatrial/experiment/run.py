"""``seatrial experiment``: every setting over fresh server starts in the plan's order, each start
measured exactly as ``seatrial bench`` measures, then the decisions.

Folder: ``OUT/run.json`` (the plan), ``OUT/summary.json`` (rewritten after every start, so an interrupted
plan is readable and ``--resume`` continues it), ``OUT/report.html``, and per start
``OUT/<setting>/start-<k>/`` with the bench run-folder contract and that start's ``server.log``.

``summary.json`` also holds the conditions of the first start (host, GPUs, engine version, the inherited
environment by digest, the files the serve command names: ``experiment.conditions``); ``--resume``
refuses to continue under other ones, naming each difference, unless told to record them
(``resume_anyway``).

No server outlives the experiment: a start's server is stopped on any way out of its start (an
exception, Ctrl-C, SIGTERM or SIGHUP, which interrupt the run as Ctrl-C does), also while it is still
being waited for.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, EngineError, RunInterrupted, SeatrialError
from seatrial.experiment.conditions import changes, conditions
from seatrial.experiment.decide import Level, decisions, level_stats
from seatrial.experiment.plan import (
    SEARCH_LEVEL,
    ExperimentPlan,
    Setting,
    differences,
    order_warnings,
    schedule,
)
from seatrial.experiment.sources import level_values, stall_reason
from seatrial.interrupts import terminations_interrupt
from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig, ObserveConfig, start_seed
from seatrial.load.level import open_receiver
from seatrial.load.metric_table import LEVEL_METRICS, REQUEST_METRICS
from seatrial.runs import RunFolder
from seatrial.runs.summaries.experiment import ExperimentSummary
from seatrial.server.engine import tracing_args, tracing_env
from seatrial.server.otlp import SpanReceiver, parse_listen
from seatrial.server.process import ServerProcess, free_port

Log = Callable[[str], None]
SHOWN_STATS = (*LEVEL_METRICS, *(f"{d}.{s}" for d in REQUEST_METRICS for s in ("p50", "p99")))


def spans_endpoint(plan: ExperimentPlan) -> str | None:
    """Where the plan's starts export their spans (``workload.otlp_listen``); None: the plan asks for none."""
    listen = plan.workload.otlp_listen
    if listen is None:
        return None
    host, port = parse_listen(listen)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1/traces"


def server_argv(plan: ExperimentPlan, setting: Setting, port: int, history: Path) -> list[str]:
    """The serve command with the setting's arguments and ``{port}`` filled in, under the guard when set;
    with spans asked for, vLLM's flag that exports them to the experiment's receiver (unless given)."""
    args = list(setting.args)
    endpoint = spans_endpoint(plan)
    if endpoint is not None and not any(a.startswith("--otlp-traces-endpoint") for a in [*plan.serve.command, *args]):
        args += tracing_args(endpoint, [*plan.serve.command, *args])
    return plan.serve.argv(args, port, history)


class Experiment:
    def __init__(
        self, plan: ExperimentPlan, out: Path, log: Log, resume: bool, resume_anyway: bool = False
    ) -> None:
        self.plan, self.out, self.log = plan, out, log
        self.seed = plan.workload.seed if plan.workload.seed is not None else plan.seed
        self.diffs = {t.name: differences(plan.baseline, t) for t in plan.treatments}
        self.receiver: SpanReceiver | None = None  # the plan's span receiver, open while the starts run
        self.conditions = conditions(plan.serve.command, [s.args for s in plan.settings])
        self.summary = self._resumed(resume_anyway) if resume or resume_anyway else self._fresh()

    def _fresh(self) -> dict[str, Any]:
        config = {"plan": self.plan.model_dump(mode="json"), "plan_sha256": self.plan.fingerprint()}
        self.folder = RunFolder.resumable(self.out, "experiment", config, resume=False)
        settings = [
            {"name": s.name, "args": s.args, "env": s.env, "role": "baseline" if s is self.plan.baseline else "treatment",
             "aa_control": self.diffs.get(s.name) == [], "differences": self.diffs.get(s.name, []), "starts": []}
            for s in self.plan.settings
        ]  # fmt: skip
        order = [{"setting": n, "start": k} for n, k in schedule(self.plan)]
        return {"plan_sha256": self.plan.fingerprint(), "seed": self.seed, "schedule": order,
                "settings": settings, "decisions": [], "complete": False, "conditions": self.conditions}  # fmt: skip

    def _resumed(self, anyway: bool) -> dict[str, Any]:
        from seatrial.runs.stored import read_run
        from seatrial.runs.summaries.experiment import ExperimentSummary

        if not (self.out / "summary.json").exists():
            raise ConfigError(f"--resume: {self.out} holds no experiment (no summary.json)")
        self.folder = RunFolder.existing(self.out, "experiment")
        stored = read_run(self.out).summary
        assert isinstance(stored, ExperimentSummary), "an experiment folder's summary reads as its model"
        summary = stored.model_dump(mode="json", exclude_unset=True)  # the file's fields, typed, as the run goes on
        if summary.get("plan_sha256") != self.plan.fingerprint():
            raise ConfigError(f"--resume: {self.out} was started from another plan (its plan_sha256 differs)")
        first = summary.get("conditions")
        found = (
            changes(first, self.conditions) if first else ["no conditions were recorded at the first start"]
        )
        if found and not anyway:
            raise ConfigError(f"--resume: {self.out} was started under other conditions: {'; '.join(found)}. Starts "
                              "under both would be compared as one experiment; pass --resume-anyway to continue "
                              "and record the differences")  # fmt: skip
        if found:
            summary["resumed_despite"] = [
                *(summary.get("resumed_despite") or []),
                {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "changes": found, "conditions": self.conditions},
            ]
            summary["conditions"] = summary.get("conditions") or self.conditions
        for s in summary["settings"]:
            s["starts"] = [st for st in s["starts"] if st.get("done")]
        return dict(summary)

    def setting(self, name: str) -> dict[str, Any]:
        return next(s for s in self.summary["settings"] if s["name"] == name)

    def run(self) -> ExperimentSummary:
        todo = [
            (n, k)
            for n, k in schedule(self.plan)
            if not any(st["index"] == k for st in self.setting(n)["starts"])
        ]
        total = len(schedule(self.plan))
        self.receiver = open_receiver(ObserveConfig(otlp_listen=self.plan.workload.otlp_listen))
        for warning in order_warnings(self.plan):
            self.log(f"warning: {warning}")
        try:
            for i, (name, k) in enumerate(todo, start=total - len(todo) + 1):
                self.log(f"[{i}/{total}] {name} start {k + 1} of {self.plan.starts}")
                self.setting(name)["starts"].append(self.one_start(name, k))
                self.setting(name)["starts"].sort(key=lambda st: st["index"])
                self.finish(complete=False)
        except KeyboardInterrupt:
            self.summary["interrupted"] = True
            self.finish(complete=False)
            raise RunInterrupted(
                f"interrupted; the folder is readable and `--resume` continues it: {self.out}"
            ) from None
        finally:
            if self.receiver is not None:
                self.receiver.stop()
        return self.finish(complete=True)

    def one_start(self, name: str, k: int) -> dict[str, Any]:
        setting = next(s for s in self.plan.settings if s.name == name)
        folder = self.out / name / f"start-{k + 1}"
        shutil.rmtree(folder, ignore_errors=True)
        record: dict[str, Any] = {"index": k, "folder": str(folder.relative_to(self.out)), "attempts": []}
        for attempt in range(self.plan.retries + 1):
            server, failure = self.launch(setting, folder, attempt)
            if server is None:
                record["attempts"].append(failure)
                self.log(f"   did not come up: {failure['error'].splitlines()[0]}")
                continue
            try:
                record.update(self.measure(server, folder, start_seed(self.seed, k)))
            finally:
                record["stop"] = server.stop(self.plan.serve.stop_grace_s)
                self.log(f"   stopped ({record['stop']['signal']}, {record['stop']['stop_s']:.1f} s)")
            record["done"] = True
            return record
        record.update({"ok": False, "done": True, "levels": []})
        return record

    def launch(
        self, setting: Setting, folder: Path, attempt: int
    ) -> tuple[ServerProcess | None, dict[str, Any]]:
        port = free_port()
        serve = self.plan.serve
        argv = server_argv(self.plan, setting, port, self.out / "guard-history.jsonl")
        log_path = folder / ("server.log" if attempt == 0 else f"server-retry{attempt}.log")
        failed = {"attempt": attempt, "log": str(log_path.relative_to(self.out))}
        try:
            spans = tracing_env() if spans_endpoint(self.plan) else {}
            server = serve.start(argv, log_path, port, {**spans, **setting.env})
        except EngineError as exc:
            return None, failed | {"error": str(exc)}
        return server, {}

    def measure(self, server: ServerProcess, folder: Path, seed: int) -> dict[str, Any]:
        """One start's bench levels and capacity searches, with the start's own seed (the experiment's +
        its start index: start K of every setting draws the same prompts and arrivals, no two starts of a
        setting do)."""
        startup_s = server.ready_s
        self.log(f"   ready in {startup_s or 0:.1f} s; measuring")
        cfg = BenchConfig.from_settings(self.plan.workload, server.url, seed=seed)
        with RunFolder(folder, "bench", cfg.model_dump(mode="json")) as run_folder:
            try:
                run = run_bench(cfg, run_folder, receiver=self.receiver, kv_line=server.kv_cache_line())
                bench = asyncio.run(run).to_json()
            except SeatrialError as exc:
                return {"ok": False, "startup_s": startup_s, "kv_cache_line": server.kv_cache_line(),
                        "error": str(exc), "levels": []}  # fmt: skip
        levels = bench["levels"]
        for lv in levels:
            self.log(f"   C={lv['concurrency']}: {lv['output_tok_s'] or 0:,.1f} output tok/s"
                     + ("" if lv["valid"] else f", INVALID: {'; '.join(lv['invalid_reasons'])}"))  # fmt: skip
        return {"ok": True, "seed": seed, "startup_s": round(startup_s or 0.0, 2), "kv_cache_line": server.kv_cache_line(),
                "nice": server.nice,
                "levels": levels, "plan_check": bench.get("plan_check"), "spans": bench.get("spans"),
                "capacity": self.capacities(cfg, folder)}  # fmt: skip

    def capacities(self, cfg: BenchConfig, folder: Path) -> dict[str, dict[str, Any]]:
        """Each capacity profile's search on this start's server (``capacity-<profile>/`` beside its bench
        run): the capacity found (req/s or users), or None and why."""
        from seatrial.capacity.run import run_capacity
        from seatrial.runs.capacity import capacity_line

        out: dict[str, dict[str, Any]] = {}
        for name, prof in self.plan.decide.profiles.items():
            if prof.capacity is None:
                continue
            config = {"bench": cfg.model_dump(mode="json"), "capacity": prof.capacity.model_dump(mode="json")}
            with RunFolder(folder / f"capacity-{name}", "capacity", config) as run_folder:
                try:
                    found = asyncio.run(run_capacity(cfg, prof.capacity, run_folder, log=lambda m: self.log(f"   {m}")))
                except SeatrialError as exc:
                    out[name] = {"value": None, "reason": f"the search failed: {exc}"}
                    continue
            c, held = found.capacity, found.held()
            unit = "req/s" if c.mode == "rate" else "users"
            lowest = min((p.load for p in found.probes), default=None)
            why = None if held is not None else c.stop_reason if lowest is None else (
                f"found no capacity: below its lowest probe, {lowest:g} {unit} ({c.stop_reason})")
            out[name] = {"value": held, "unit": unit, "bracket": [c.value, c.upper], "line": capacity_line(found),
                         "lowest": lowest, "reason": why}  # fmt: skip
            self.log(f"   capacity {name}: {capacity_line(found)}")
        return out

    def valid_levels(self) -> tuple[dict[str, dict[int, list[Level]]], list[dict[str, Any]]]:
        """Per setting and concurrency, the valid levels in run order with their request values, start,
        run slot and whether the client stalled; and every invalid level with its reasons."""
        order = {(r["setting"], r["start"]): i for i, r in enumerate(self.summary["schedule"])}
        valid: dict[str, dict[int, list[Level]]] = {}
        invalid = []
        for s in self.summary["settings"]:
            for st in sorted(s["starts"], key=lambda st: order.get((s["name"], st["index"]), 0)):
                for lv in st.get("levels", []):
                    if not lv["valid"]:
                        invalid.append({"setting": s["name"], "start": st["index"], "concurrency": lv["concurrency"],
                                        "reasons": lv["invalid_reasons"]})  # fmt: skip
                        continue
                    level = {**lv, "start": st["index"], "slot": order.get((s["name"], st["index"]))}
                    level["values"] = level_values(self.out / st["folder"], lv)
                    level["stalled"] = stall_reason(lv, self.plan.workload.max_lag_ms)
                    valid.setdefault(s["name"], {}).setdefault(lv["concurrency"], []).append(level)
                if st.get("capacity"):
                    valid.setdefault(s["name"], {}).setdefault(SEARCH_LEVEL, []).append(
                        searched(st, order.get((s["name"], st["index"])))
                    )
        return valid, invalid

    def failures(self, invalid: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """Per setting, its starts that did not come up (or whose measurement failed) and its INVALID levels."""
        out: dict[str, list[dict[str, Any]]] = {}
        for s in self.summary["settings"]:
            for st in s["starts"]:
                if not st.get("ok"):
                    why = st.get("error") or "did not come up" + (
                        f" ({len(st['attempts'])} attempts)" if st.get("attempts") else ""
                    )
                    out.setdefault(s["name"], []).append(
                        {"start": st["index"], "concurrency": None, "reason": why.splitlines()[0]}
                    )
        for r in invalid:
            out.setdefault(r["setting"], []).append({"start": r["start"], "concurrency": r["concurrency"],
                "reason": f"level C={r['concurrency']} INVALID ({'; '.join(r['reasons'])})"})  # fmt: skip
        return out

    def finish(self, complete: bool) -> ExperimentSummary:
        valid, invalid = self.valid_levels()
        capacity_keys = [p.key(n) for n, p in self.plan.decide.profiles.items() if p.capacity is not None]
        for s in self.summary["settings"]:
            s["levels"] = [
                {
                    "concurrency": c,
                    "valid_starts": len(v),
                    "stats": level_stats(v, tuple(capacity_keys) if c == SEARCH_LEVEL else SHOWN_STATS),
                    "stalled_starts": [lv["start"] for lv in v if lv["stalled"]],
                }
                for c, v in sorted(valid.get(s["name"], {}).items())
            ]
        self.summary["invalid_levels"] = invalid
        failures = self.failures(invalid)
        self.summary["failed_starts"] = [{"setting": n, **f} for n, fs in failures.items() for f in fs]
        aa = {s["name"]: s["aa_control"] for s in self.summary["settings"]}
        self.summary.update(decisions(self.plan, valid, aa, failures))
        self.summary["warnings"] = order_warnings(self.plan)
        self.summary["complete"] = complete
        self.summary["failed_settings"] = [
            s["name"]
            for s in self.summary["settings"]
            if s["starts"] and not any(st.get("ok") for st in s["starts"])
        ]
        summary = ExperimentSummary.model_validate(self.summary)
        self.folder.write_summary(summary)
        return summary


def searched(start: dict[str, Any], slot: int | None) -> Level:
    """A start's capacity searches as a level of their own (``SEARCH_LEVEL``): the capacity each capacity
    profile's search found (or None, and why) and the bracket it lay in."""
    found = start["capacity"]
    return {"concurrency": SEARCH_LEVEL, "start": start["index"], "slot": slot, "values": {}, "stalled": None,
            "capacity": {k: c["value"] for k, c in found.items()},
            "capacity_reasons": {k: c["reason"] for k, c in found.items()},
            "capacity_brackets": {k: c.get("bracket") for k, c in found.items()}}  # fmt: skip


def run_experiment(plan: ExperimentPlan, out: Path, log: Log = print, resume: bool = False,
                   resume_anyway: bool = False) -> ExperimentSummary:  # fmt: skip
    """The plan's every start in ``out`` (``resume``: continue it there; ``resume_anyway``: also under
    conditions that changed since its first start, recorded in ``resumed_despite``)."""
    started = time.monotonic()
    with terminations_interrupt():
        summary = Experiment(plan, out, log, resume, resume_anyway).run()
    log(f"experiment done in {time.monotonic() - started:,.0f} s")
    return summary
