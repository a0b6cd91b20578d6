"""``seatrial experiment``: every setting over fresh server starts in the plan's order, each start
measured exactly as ``seatrial bench`` measures, then the decisions.

Folder: ``OUT/run.json`` (the plan), ``OUT/summary.json`` (rewritten after every start, so an interrupted
plan is readable and ``--resume`` continues it), ``OUT/report.html``, and per start
``OUT/<setting>/start-<k>/`` with the bench run-folder contract and that start's ``server.log``.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, EngineError, RunInterrupted, SeatrialError
from seatrial.experiment.decide import Level, decisions, level_stats
from seatrial.experiment.plan import (
    DISTRIBUTIONS,
    THROUGHPUTS,
    ExperimentPlan,
    Setting,
    differences,
    schedule,
)
from seatrial.experiment.sources import level_values
from seatrial.jsonio import read_json
from seatrial.load.bench import run_bench
from seatrial.runs import RunFolder, write_redacted
from seatrial.server.process import ServerProcess, free_port

Log = Callable[[str], None]
LEVEL_METRICS = (*THROUGHPUTS, *(f"{d}.{s}" for d in DISTRIBUTIONS for s in ("p50", "p99")))


def server_argv(plan: ExperimentPlan, setting: Setting, port: int, history: Path) -> list[str]:
    """The serve command with the setting's arguments and ``{port}`` filled in, under the guard when set."""
    command = [part.replace("{port}", str(port)) for part in plan.serve.command] + setting.args
    guard = plan.serve.guard
    if guard is None:
        return command
    wrapper = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "guard",
        *guard.flags(),
        "--history",
        str(history),
        "--",
    ]
    return wrapper + command


class Experiment:
    def __init__(self, plan: ExperimentPlan, out: Path, log: Log, resume: bool) -> None:
        self.plan, self.out, self.log = plan, out, log
        self.seed = plan.workload.seed if plan.workload.seed is not None else plan.seed
        self.diffs = {t.name: differences(plan.baseline, t) for t in plan.treatments}
        self.summary = self._resumed() if resume else self._fresh()

    def _fresh(self) -> dict[str, Any]:
        if self.out.exists() and any(self.out.iterdir()):
            raise ConfigError(f"--out {self.out} exists and is not empty; pass --resume to continue it")
        config = {"plan": self.plan.model_dump(mode="json"), "plan_sha256": self.plan.fingerprint()}
        RunFolder(self.out, "experiment", config, requests=False).close()
        settings = [
            {"name": s.name, "args": s.args, "env": s.env, "role": "baseline" if s is self.plan.baseline else "treatment",
             "aa_control": self.diffs.get(s.name) == [], "differences": self.diffs.get(s.name, []), "starts": []}
            for s in self.plan.settings
        ]  # fmt: skip
        order = [{"setting": n, "start": k} for n, k in schedule(self.plan)]
        return {"plan_sha256": self.plan.fingerprint(), "seed": self.seed, "schedule": order,
                "settings": settings, "decisions": [], "complete": False}  # fmt: skip

    def _resumed(self) -> dict[str, Any]:
        path = self.out / "summary.json"
        if not path.exists():
            raise ConfigError(f"--resume: {self.out} holds no experiment (no summary.json)")
        summary = read_json(path)
        if summary.get("plan_sha256") != self.plan.fingerprint():
            raise ConfigError(f"--resume: {self.out} was started from another plan (its plan_sha256 differs)")
        for s in summary["settings"]:
            s["starts"] = [st for st in s["starts"] if st.get("done")]
        return dict(summary)

    def setting(self, name: str) -> dict[str, Any]:
        return next(s for s in self.summary["settings"] if s["name"] == name)

    def run(self) -> dict[str, Any]:
        todo = [
            (n, k)
            for n, k in schedule(self.plan)
            if not any(st["index"] == k for st in self.setting(n)["starts"])
        ]
        total = len(schedule(self.plan))
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
                record.update(self.measure(server, folder))
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
        try:
            server = ServerProcess(
                argv, log_path, host=serve.host, port=port, env={**serve.env, **setting.env}
            )
            server.startup_s = server.wait_ready(serve.ready_timeout_s, serve.health_path)  # type: ignore[attr-defined]
        except EngineError as exc:
            if "server" in locals():
                server.stop(serve.stop_grace_s)
            return None, {"attempt": attempt, "error": str(exc), "log": str(log_path.relative_to(self.out))}
        return server, {}

    def measure(self, server: ServerProcess, folder: Path) -> dict[str, Any]:
        startup_s = server.ready_s
        self.log(f"   ready in {startup_s or 0:.1f} s; measuring")
        cfg = self.plan.workload.bench_config(server.url, self.seed)
        with RunFolder(folder, "bench", cfg.model_dump(mode="json")) as run_folder:
            try:
                bench = asyncio.run(run_bench(cfg, run_folder))
            except SeatrialError as exc:
                return {"ok": False, "startup_s": startup_s, "kv_cache_line": server.kv_cache_line(),
                        "error": str(exc), "levels": []}  # fmt: skip
        levels = bench["levels"]
        for lv in levels:
            self.log(f"   C={lv['concurrency']}: {lv['output_tok_s'] or 0:,.1f} output tok/s"
                     + ("" if lv["valid"] else f", INVALID: {'; '.join(lv['invalid_reasons'])}"))  # fmt: skip
        return {"ok": True, "startup_s": round(startup_s or 0.0, 2), "kv_cache_line": server.kv_cache_line(),
                "levels": levels}  # fmt: skip

    def valid_levels(self) -> tuple[dict[str, dict[int, list[Level]]], list[dict[str, Any]]]:
        """Per setting and concurrency, the valid levels in run order with their request values; and
        every invalid level with its reasons."""
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
                    values = level_values(self.out / st["folder"], lv.get("index"), lv["concurrency"])
                    valid.setdefault(s["name"], {}).setdefault(lv["concurrency"], []).append(
                        {**lv, "values": values}
                    )
        return valid, invalid

    def finish(self, complete: bool) -> dict[str, Any]:
        valid, invalid = self.valid_levels()
        for s in self.summary["settings"]:
            s["levels"] = [
                {"concurrency": c, "valid_starts": len(v), "stats": level_stats(v, LEVEL_METRICS)}
                for c, v in sorted(valid.get(s["name"], {}).items())
            ]
        self.summary["invalid_levels"] = invalid
        aa = {s["name"]: s["aa_control"] for s in self.summary["settings"]}
        self.summary["decisions"] = decisions(self.plan, valid, aa)
        self.summary["complete"] = complete
        self.summary["failed_settings"] = [
            s["name"]
            for s in self.summary["settings"]
            if s["starts"] and not any(st.get("ok") for st in s["starts"])
        ]
        write_redacted(self.out / "summary.json", self.summary)
        return self.summary


def run_experiment(plan: ExperimentPlan, out: Path, log: Log = print, resume: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    summary = Experiment(plan, out, log, resume).run()
    log(f"experiment done in {time.monotonic() - started:,.0f} s")
    return summary
