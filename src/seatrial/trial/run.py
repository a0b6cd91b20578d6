"""A trial's run: its stages in order, each gating the next, in one folder that ``--resume`` continues.

``OUT/run.json`` (command ``trial``), ``OUT/trial-state.json`` (``trial.state``: what a resume reuses),
``OUT/N-stage/`` each stage's run folder, ``OUT/summary.json`` (:class:`TrialSummary`) and the report. A FAIL
stops the trial (``continue_on_fail`` records it and goes on); the stages after it are listed UNAVAILABLE with
why, never left out. Ctrl-C ends the stage running as interrupted: the summary is written, the exit code is
130, and ``--resume`` runs that stage again and reuses those finished before it.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, RunInterrupted, SeatrialError
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.trial import CandidateRow, ProfileRow, StageRow, TrialSummary
from seatrial.trial import state
from seatrial.trial.context import Log, Outcome, TrialContext, brief
from seatrial.trial.plan import STAGES, TrialPlan
from seatrial.trial.stages import READS, stage

INTERRUPTED_EXIT = 130


@dataclass
class TrialOptions:
    out: Path
    resume: bool = False
    only: list[str] | None = None
    until: str | None = None
    continue_on_fail: bool = False


def chosen(plan: TrialPlan, only: list[str] | None, until: str | None) -> list[str]:
    """The stages this run may run: the plan's ``stages.run``, narrowed by ``--only`` and cut after ``--until``."""
    for flag, names in (("--only", only or []), ("--until", [until] if until else [])):
        if bad := [n for n in names if n not in STAGES]:
            raise ConfigError(f"{flag}: unknown stage {bad[0]!r}; stages: {', '.join(STAGES)}")
    names = [s for s in STAGES if s in plan.stages.run and (not only or s in only)]
    return [s for s in names if not until or STAGES.index(s) <= STAGES.index(until)]


class Trial:
    def __init__(self, plan: TrialPlan, opts: TrialOptions, log: Log) -> None:
        self.plan, self.opts, self.log = plan, opts, log
        self.doc = state.plan_doc(plan)
        self.fps = state.fingerprints(self.doc)
        self.todo = chosen(plan, opts.only, opts.until)
        self.old, self.changes = self._open()
        self.stages: dict[str, Any] = dict(self.old)
        self.ctx = TrialContext(plan, opts.out, checkpoint_of(plan, opts.out, log), log)
        self.ran: set[str] = set()

    def _open(self) -> tuple[dict[str, Any], list[str]]:
        out = self.opts.out
        RunFolder.resumable(out, "trial", {"plan": self.doc}, self.opts.resume).close()
        if not self.opts.resume:
            return {}, []
        prior = state.read_state(out)
        changed = state.changes(prior.get("plan"), self.doc)
        return prior.get("stages") or {}, changed

    def reusable(self, name: str) -> bool:
        """Done before, not FAILed (its cause may be fixed since), under the same plan, and nothing it reads
        run again."""
        prev = self.old.get(name)
        if not prev or not prev["completed"] or prev["outcome"]["verdict"] == "FAIL":
            return False
        return prev["fingerprint"] == self.fps[name] and not set(READS[name]) & self.ran

    def run(self) -> TrialSummary:
        t0 = time.monotonic()
        rows: list[StageRow] = []
        stopped: str | None = None
        resumed_from: str | None = None
        for i, name in enumerate(STAGES):
            if stopped or name not in self.todo:
                rows.append(self._not_run(name, stopped))
                continue
            if self.opts.resume and self.reusable(name):
                rows.append(self._reuse(name))
                continue
            resumed_from = resumed_from or (name if self.opts.resume else None)
            self.log(f"[{i}/{len(STAGES) - 1}] {name}")
            try:
                outcome, seconds = self._run(name)
            except (KeyboardInterrupt, RunInterrupted):
                rows.append(StageRow(name=name, verdict="UNAVAILABLE", folder=self._folder(name),
                                     reason="interrupted: continue with --resume", exit_code=INTERRUPTED_EXIT))  # fmt: skip
                stopped = name
                continue
            rows.append(self._row(name, outcome, seconds))
            if outcome.stops and not self.opts.continue_on_fail:
                stopped = name
        return self._summary(rows, resumed_from, time.monotonic() - t0)

    def _run(self, name: str) -> tuple[Outcome, float]:
        folder = self.ctx.folder(name)
        if folder.exists():  # a stage run again starts from an empty folder of its own
            shutil.rmtree(folder)
        self.ran.add(name)
        t = time.monotonic()
        try:
            outcome = stage(name)(self.ctx)
        except (KeyboardInterrupt, RunInterrupted):
            self._save(name, Outcome("UNAVAILABLE", "interrupted"), time.monotonic() - t, completed=False)
            raise
        except SeatrialError as exc:
            outcome = Outcome("FAIL", brief(exc), exit_code=exc.exit_code)
        seconds = time.monotonic() - t
        self.ctx.outcomes[name] = outcome
        self._save(name, outcome, seconds, completed=True)
        self.log(f"    {name}: {outcome.verdict} in {seconds:.1f} s: {outcome.reason or ''}")
        return outcome, seconds

    def _save(self, name: str, outcome: Outcome, seconds: float, completed: bool) -> None:
        self.stages[name] = state.entry(self.fps[name], outcome, seconds, completed)
        state.write_state(self.opts.out, self.doc, self.stages)

    def _folder(self, name: str) -> str | None:
        return self.ctx.folder(name).name if self.ctx.folder(name).is_dir() else None

    def _row(self, name: str, outcome: Outcome, seconds: float, reused: bool = False) -> StageRow:
        return StageRow(name=name, verdict=outcome.verdict, folder=self._folder(name), seconds=round(seconds, 3),
                        reason=outcome.reason, reused=reused, exit_code=outcome.exit_code)  # fmt: skip

    def _reuse(self, name: str) -> StageRow:
        prev = self.old[name]
        self.ctx.outcomes[name] = outcome = state.outcome_of(prev)
        self.log(f"    {name}: {outcome.verdict} (reused from the earlier run)")
        return self._row(name, outcome, prev["seconds"], reused=True)

    def _not_run(self, name: str, stopped: str | None) -> StageRow:
        if stopped:
            return StageRow(name=name, verdict="UNAVAILABLE", reason=f"not run: the trial stopped at {stopped}")
        if self.reusable(name):  # done before and still valid: its outcome feeds the stages that run
            return self._reuse(name)
        why = "not in stages.run" if name not in self.plan.stages.run else "not chosen (--only / --until)"
        return StageRow(name=name, verdict="UNAVAILABLE", reason=f"not run: {why}")

    def _summary(self, rows: list[StageRow], resumed_from: str | None, wall: float) -> TrialSummary:
        from seatrial.trial.diagnosis import diagnose

        gone = self.ctx.dropped()
        cands = [CandidateRow(name=c.name, dropped=c.name in gone, stage=gone.get(c.name, (None, None))[0],
                              reason=gone.get(c.name, (None, None))[1]) for c in self.plan.candidates]  # fmt: skip
        profiles = [ProfileRow.model_validate(p) for p in self.ctx.data("decision").get("profiles", [])]
        summary = TrialSummary(stages=rows, candidates=cands, profiles=profiles, diagnosis=diagnose(self.ctx),
                               resumed_from=resumed_from, plan_changes=self._changes(), exit_code=exit_code(rows),
                               seconds=round(wall, 3), overhead_s=round(wall - sum(r.seconds for r in rows if not r.reused), 3))  # fmt: skip
        RunFolder.existing(self.opts.out, "trial").write_summary(summary)
        return summary

    def _changes(self) -> list[str]:
        if not self.changes:
            return []
        again = [s for s in STAGES if s in self.old and self.old[s]["fingerprint"] != self.fps[s]]
        return [f"changed: {c}" for c in self.changes] + [f"run again: {', '.join(again) or 'none'}"]


def exit_code(rows: list[StageRow]) -> int:
    """The first stage's non-zero exit code in the trial's order (130 for an interrupt); 8 where no stage
    measured anything (every one UNAVAILABLE)."""
    from seatrial.runs.verdicts import NOTHING_MEASURED_EXIT

    if any(r.exit_code == INTERRUPTED_EXIT for r in rows):
        return INTERRUPTED_EXIT
    if code := next((r.exit_code for r in rows if r.exit_code), 0):
        return code
    return NOTHING_MEASURED_EXIT if all(r.verdict == "UNAVAILABLE" for r in rows) else 0


def checkpoint_of(plan: TrialPlan, out: Path, log: Log) -> Path:
    """The checkpoint the trial tests: the plan's folder, or the tiny model made once in ``OUT/tiny-model``."""
    dep = plan.deployment
    if dep.tiny_model:
        path = out / "tiny-model"
        if not (path / "config.json").is_file():
            from seatrial.server.engine import make_tiny_model

            log("making the tiny model (random BF16 weights) in the trial folder")
            make_tiny_model(path, max_len=4096, weights=True)
        return path
    assert dep.checkpoint is not None
    if not dep.checkpoint.is_dir() and not (dep.checkpoint.is_file() and dep.checkpoint.suffix == ".gguf"):
        raise ConfigError(f"deployment.checkpoint: {dep.checkpoint} is not a folder (nor a .gguf file)")
    return dep.checkpoint


def run_trial(plan: TrialPlan, opts: TrialOptions, log: Log = print) -> TrialSummary:
    return Trial(plan, opts, log).run()
