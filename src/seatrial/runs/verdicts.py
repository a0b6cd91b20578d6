"""The verdict words every trial ends in, and what a run's verdicts add up to: ``passed``,
``not_measured``, the verdict counts and the exit code. A verdict always carries the evidence it was
drawn from (:class:`seatrial.runs.result.TrialResult`); a summary holds what they add up to as
:class:`seatrial.runs.summaries.base.Judged`.

- ``passed`` is true only when at least one trial PASSed and none is FAIL, UNSTABLE, REVIEW_REQUIRED or
  INCONCLUSIVE. UNAVAILABLE and UNSUPPORTED are honest words, not successes: they are listed in
  ``not_measured`` with their reasons and never make a run pass by themselves.
- ``require`` names trials (or groups: ``precision`` is every ``precision.*``) that must be measured: a
  required trial that is UNAVAILABLE or UNSUPPORTED, or that did not run, makes the run fail.
- exit code: 0 when passed; 8 when nothing was measured (every trial UNAVAILABLE or UNSUPPORTED, none
  required); 1 otherwise (a failed verdict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from seatrial.runs.table import Table

if TYPE_CHECKING:
    from seatrial.runs.result import TrialResult


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNSTABLE = "UNSTABLE"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    UNSUPPORTED = "UNSUPPORTED"
    UNAVAILABLE = "UNAVAILABLE"
    INCONCLUSIVE = "INCONCLUSIVE"

    def __str__(self) -> str:
        return self.value


NOT_MEASURED = (Verdict.UNAVAILABLE, Verdict.UNSUPPORTED)
BLOCKING = (Verdict.FAIL, Verdict.UNSTABLE, Verdict.REVIEW_REQUIRED, Verdict.INCONCLUSIVE)
PASSED_EXIT, FAILED_EXIT, NOTHING_MEASURED_EXIT = 0, 1, 8


def _matches(name: str, wanted: str) -> bool:
    return name == wanted or name.startswith(wanted + ".")


def judge_run(trials: Iterable[TrialResult], require: Iterable[str] = ()) -> dict[str, Any]:
    """``{"passed", "not_measured", "counts", "missing_required", "exit_code"}`` of a run's trials (a summary.json's
    rows read back with :func:`seatrial.runs.result.read_trials`)."""
    rows = list(trials)
    counts = Counter(t.verdict.value for t in rows)
    not_measured = [
        {"name": t.name, "gpu": t.gpu, "verdict": t.verdict.value, "reason": t.reason}
        | ({"node": t.node} if t.node else {})
        for t in rows
        if t.verdict in NOT_MEASURED
    ]
    required = list(require)
    missing = [
        w for w in required
        if not any(_matches(t.name, w) for t in rows)
        or any(_matches(t.name, w) and t.verdict in NOT_MEASURED for t in rows)
    ]  # fmt: skip
    measured = any(t.verdict is Verdict.PASS for t in rows)
    blocked = any(t.verdict in BLOCKING for t in rows)
    passed = measured and not blocked and not missing
    if passed:
        code = PASSED_EXIT
    elif rows and all(t.verdict in NOT_MEASURED for t in rows) and not required:
        code = NOTHING_MEASURED_EXIT
    else:
        code = FAILED_EXIT
    return {
        "passed": passed,
        "not_measured": not_measured,
        "counts": dict(sorted(counts.items())),
        "missing_required": missing,
        "exit_code": code,
    }


def counts_line(counts: dict[str, int]) -> str:
    """``3 PASS, 1 FAIL, 2 UNAVAILABLE`` (PASS first, then the rest in the verdict order)."""
    order = [v.value for v in Verdict]
    return ", ".join(f"{counts[v]} {v}" for v in order if counts.get(v))


#: What a summary keeps of :func:`judge_run` (the exit code is the CLI's).
VERDICT_FIELDS = ("passed", "not_measured", "counts", "missing_required")


def verdict_fields(trials: Iterable[TrialResult], require: Iterable[str] = ()) -> dict[str, Any]:
    """``passed``, ``not_measured``, ``counts`` and ``missing_required`` of a run's trials, for its summary."""
    judged = judge_run(trials, require)
    return {k: judged[k] for k in VERDICT_FIELDS}


TRIAL_COLUMNS = ("trial", "verdict", "functional", "performance", "class", "samples", "why")


def trial_table(trials: list[dict[str, Any]], title: str = "seatrial accept") -> Table:
    """One row per trial with its verdict, the sample sizes it was drawn from and its reasons (console and
    report show the same)."""
    rows, ok = [], []
    for t in trials:
        samples = ", ".join(f"{k}={v}" for k, v in t.get("samples", {}).items())
        rows.append([t["name"], t["verdict"], t.get("functional") or "-", t.get("performance") or "-",
                     t.get("classification") or "-", samples, "; ".join(t.get("reasons", []))])  # fmt: skip
        ok.append(Verdict(t["verdict"]) not in BLOCKING)
    return Table(title, TRIAL_COLUMNS, rows, ok)
