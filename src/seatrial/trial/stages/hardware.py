"""Stage 1, the hardware: ``seatrial hw`` on every node at once (a Ray cluster's nodes, else this host; ssh nodes
are not reached by hw: said, not skipped). A FAIL stops the trial; the GPUs a FAIL names are kept out of the launch."""

from __future__ import annotations

from typing import Any

from seatrial.runs.folder import record
from seatrial.runs.result import TrialResult, read_trials
from seatrial.trial.context import Outcome, TrialContext, judged
from seatrial.trial.plan import RayNodes


def run(ctx: TrialContext) -> Outcome:
    from seatrial.hw import HwConfig

    st = ctx.plan.stages.hardware
    cfg = HwConfig(duration_s=st.duration_s, expect_gpus=st.expect_gpus, **({"trials": st.trials} if st.trials else {}))
    nodes = ctx.plan.deployment.nodes
    if isinstance(nodes, RayNodes):
        from seatrial.hw.fleet import run_hw_ray

        summary = run_hw_ray(nodes.ray, cfg)
        rows = read_trials([t for n in summary["nodes"] for t in n["trials"]] + summary["fleet"])
        failed: list[int] = []  # on several nodes no one CUDA_VISIBLE_DEVICES holds: named, not applied
        indices: list[int] = []
    else:
        from seatrial.hw import run_hw

        hw = run_hw(cfg)
        summary = hw.report.to_json()
        rows = list(hw.report.trials)
        failed = sorted({t.gpu for t in rows if t.verdict == "FAIL" and t.gpu is not None})
        indices = [g.index for g in hw.report.gpus]
    record(ctx.folder("hardware"), "hw", cfg.model_dump(mode="json"), summary)
    out = judged(rows, "hw")
    if ctx.plan.deployment.ssh_hosts:
        out.reason = f"{out.reason}; this host only: hw does not reach ssh nodes (use a Ray cluster)"
    out.data = _data(rows, failed, indices if failed else [])
    if failed:
        out.reason = f"{out.reason}; GPUs {', '.join(map(str, failed))} FAILed: kept out of the launch"
    return out


def _data(rows: list[TrialResult], failed: list[int], indices: list[int]) -> dict[str, Any]:
    data: dict[str, Any] = {"verdicts": {t.name + (f"@{t.gpu}" if t.gpu is not None else ""): t.verdict.value
                                         for t in rows}}  # fmt: skip
    if failed:
        data["usable_gpus"] = [g for g in indices if g not in failed]
    return data
