"""``seatrial demo``: ``seatrial trial`` on the example plan (``seatrial trial --example``: the tiny model on this
host's vLLM-CPU, candidates max-num-seqs 2 and 8), one code path with a user's trial. Its one addition: a second
"node" for the fleet stage, a folder inside the demo's own (``local:OUT/node-b/tiny-model``), so that sync and
doctor run too."""

from __future__ import annotations

from pathlib import Path

from seatrial.runs.summaries.trial import TrialSummary
from seatrial.trial.context import Log


def demo_plan(out: Path) -> dict[str, object]:
    """The example plan, its nodes this host and a second folder of the demo's."""
    import yaml

    from seatrial.trial.example import example_plan

    plan: dict[str, object] = yaml.safe_load(example_plan())
    plan["deployment"] = {**plan["deployment"], "nodes": [f"local:{out.resolve() / 'node-b' / 'tiny-model'}"]}  # type: ignore[dict-item]
    return plan


def run_demo(out: Path, log: Log = print) -> TrialSummary:
    from seatrial.trial.plan import TrialPlan
    from seatrial.trial.run import TrialOptions, run_trial

    return run_trial(TrialPlan.model_validate(demo_plan(out)), TrialOptions(out=out), log)
