"""Stage 2, the I/O: ``seatrial io``'s trials (by default the storage ones, on the filesystem that holds the
checkpoint) on every node: this host, the ssh nodes' hosts, or a Ray cluster's nodes."""

from __future__ import annotations

from seatrial.runs.folder import record
from seatrial.trial.context import Outcome, TrialContext, judged
from seatrial.trial.plan import RayNodes


def run(ctx: TrialContext) -> Outcome:
    from seatrial.fleet.nodes import Ssh
    from seatrial.io.models import IoConfig
    from seatrial.io.nodes import Node, parse_node
    from seatrial.io.raynode import ray_nodes
    from seatrial.io.runner import run_io, summary_json

    st = ctx.plan.stages.io
    cfg = IoConfig(trials=st.trials, repeats=st.repeats, runtime_s=st.runtime_s, size_mib=st.size_mib, jobs=st.jobs,
                   max_cv=st.max_cv, checkpoint=str(ctx.checkpoint) if ctx.checkpoint.is_dir() else None,
                   path=str(st.path or ctx.folder("io") / "scratch"))  # fmt: skip
    (ctx.folder("io") / "scratch").mkdir(parents=True, exist_ok=True)
    ssh = Ssh()
    nodes = ctx.plan.deployment.nodes
    found: list[Node]
    if isinstance(nodes, RayNodes):
        found = list(ray_nodes(nodes.ray, ssh))
    else:
        found = [parse_node(h, ssh) for h in ["local", *ctx.plan.deployment.ssh_hosts]]
    summary = run_io(cfg, found)
    record(ctx.folder("io"), "io", cfg.model_dump(mode="json"), summary_json(summary, []))
    out = judged([r.as_trial() for r in summary.rows()], "io")
    out.data = {"figures": {f"{r.node}:{r.trial}": r.figures for r in summary.results}}
    return out
