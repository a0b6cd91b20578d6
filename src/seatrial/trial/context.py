"""What a trial's stages share: the plan, the trial's folder, the checkpoint, each stage's outcome so far (what a
later stage reads of an earlier one), and the candidates still in the trial."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seatrial.server.serve import Serve
from seatrial.trial.plan import Candidate, TrialPlan

if TYPE_CHECKING:
    from seatrial.runs.result import TrialResult

Log = Callable[[str], None]


@dataclass
class Outcome:
    """A stage's result: its verdict word and reason, what later stages read of it (``data``; its ``dropped``
    names candidates it took out of the trial, with why), and the exit code it stands for."""

    verdict: str
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    exit_code: int = 0

    @property
    def stops(self) -> bool:
        """A FAIL gates the trial (``--continue-on-fail`` records it and goes on)."""
        return self.verdict == "FAIL"


@dataclass
class TrialContext:
    plan: TrialPlan
    out: Path
    checkpoint: Path
    log: Log = print
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    def folder(self, stage: str) -> Path:
        from seatrial.trial.plan import STAGES

        return self.out / f"{STAGES.index(stage)}-{stage}"

    def data(self, stage: str) -> dict[str, Any]:
        """What ``stage`` left for later stages (empty where it did not run)."""
        got = self.outcomes.get(stage)
        return got.data if got else {}

    def dropped(self) -> dict[str, tuple[str, str]]:
        """Candidate -> (stage, why) for every candidate a stage so far took out of the trial."""
        out: dict[str, tuple[str, str]] = {}
        for stage, got in self.outcomes.items():
            for name, why in got.data.get("dropped", {}).items():
                out.setdefault(name, (stage, why))
        return out

    def remaining(self) -> list[Candidate]:
        gone = self.dropped()
        return [c for c in self.plan.candidates if c.name not in gone]

    def model_of(self, candidate: Candidate) -> Path:
        """The checkpoint a candidate serves: its conversion's output where it has one."""
        converted = self.data("checkpoint").get("models", {}).get(candidate.name)
        return Path(converted) if converted else self.checkpoint

    def launch_env(self) -> dict[str, str]:
        """The GPUs a hardware FAIL named kept out of every launch (CUDA_VISIBLE_DEVICES of the others)."""
        keep = self.data("hardware").get("usable_gpus")
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, keep))} if keep is not None else {}


def judged(rows: list[TrialResult], what: str) -> Outcome:
    """A stage's verdict from its trials' results (a summary.json's rows through ``read_trials``): PASS when they passed,
    UNAVAILABLE when nothing was measured (not a FAIL: the trial goes on, said), else the worst blocking word."""
    from seatrial.runs.verdicts import BLOCKING, NOTHING_MEASURED_EXIT, counts_line, judge_run

    j = judge_run(rows)
    line = f"{what}: {counts_line(j['counts'])}"
    if j["passed"]:
        return Outcome("PASS", line)
    if j["exit_code"] == NOTHING_MEASURED_EXIT:
        why = j["not_measured"][0]["reason"] if j["not_measured"] else "nothing to measure"
        return Outcome("UNAVAILABLE", f"{line}: nothing measured ({why})")
    worst = next((v.value for v in BLOCKING if j["counts"].get(v.value)), "FAIL")
    return Outcome(worst, line, exit_code=j["exit_code"])


def candidate_serve(ctx: TrialContext, cand: Candidate) -> Serve:
    """How ``cand`` starts: the plan's serve block with ``{model}`` its checkpoint, its args after the command,
    its env (and the GPUs the hardware stage kept) over the block's (the plan puts every start under guard)."""
    model = str(ctx.model_of(cand))
    serve = ctx.plan.serve
    return Serve.model_validate(
        serve.model_dump()
        | {
            "command": [part.replace("{model}", model) for part in serve.command] + cand.args,
            "env": {**serve.env, **cand.env, **ctx.launch_env()},
        }
    )


def brief(exc: BaseException) -> str:
    """An error in one line: its first, and its last where the first ends in ':' (a log's tail follows)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    return f"{lines[0]} {lines[-1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
