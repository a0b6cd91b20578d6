"""Stage 5, capacity (seed 004's Stage 7): for each remaining candidate and profile, the capacity search on fresh
starts (``capacity --serve --starts``) and the capacity a fresh replica holds over them (capacity.replica)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seatrial.capacity.starts import run_starts, starts_config
from seatrial.load.level import NoProgress
from seatrial.runs.folder import RunFolder
from seatrial.runs.stored import read_run
from seatrial.runs.summaries.capacity import CapacitySummary, ReplicaCapacity
from seatrial.trial.context import Outcome, TrialContext, candidate_serve
from seatrial.trial.plan import Candidate, Profile


def run(ctx: TrialContext) -> Outcome:
    rows: dict[str, dict[str, Any]] = {}
    for cand in ctx.remaining():
        for prof in ctx.plan.profiles:
            ctx.log(f"   {cand.name} x {prof.name}: {ctx.plan.stages.capacity.starts} fresh start(s)")
            got = _one(ctx, cand, prof)
            rows.setdefault(cand.name, {})[prof.name] = got
            ctx.log(f"   {cand.name} x {prof.name}: {got['line']}")
    if not rows:
        return Outcome("UNAVAILABLE", "no candidate left to measure", {"rows": rows})
    unmet = [p.name for p in ctx.plan.profiles if not any(r[p.name]["capacity"] for r in rows.values())]
    if unmet:
        return Outcome("FAIL", f"no candidate holds the SLO of {', '.join(unmet)}", {"rows": rows}, 1)
    return Outcome("PASS", f"{len(rows)} candidate(s) x {len(ctx.plan.profiles)} profile(s) measured", {"rows": rows})


def _one(ctx: TrialContext, cand: Candidate, prof: Profile) -> dict[str, Any]:
    st = ctx.plan.stages.capacity
    ccfg = st.config(prof, cand.gpus)
    serve = candidate_serve(ctx, cand)
    bench = prof.bench()
    out = ctx.folder("capacity") / f"{cand.name}--{prof.name}"
    config = starts_config(serve, st.starts, bench, ccfg)
    with RunFolder(out, "capacity", config, requests=False) as folder:
        replica = run_starts(bench, ccfg, serve, st.starts, out, lambda m: ctx.log(f"     {m}"), NoProgress())
        folder.write_summary(replica)
    return _figures(replica, out) | {"folder": f"{out.parent.name}/{out.name}"}


def _figures(replica: ReplicaCapacity, out: Path) -> dict[str, Any]:
    """The replica's bound and, per start, what the decision reads: its capacity, its bracket and its held
    probe."""
    starts = []
    for s in replica.starts:
        row: dict[str, Any] = {"start": s.start, "capacity": s.capacity, "error": s.error, "startup_s": s.startup_s}
        if s.folder and s.capacity is not None and (out / s.folder / "summary.json").is_file():
            summary = read_run(out / s.folder).summary
            if isinstance(summary, CapacitySummary):
                row |= _at_capacity(summary)
        starts.append(row)
    if replica.capacity is not None:
        line = f"{replica.capacity:.4g} req/s ({replica.method})"
    else:
        line = f"none: {replica.method}" + (f" (below {replica.below:g} req/s)" if replica.below is not None else "")
    return {"capacity": replica.capacity, "below": replica.below, "method": replica.method, "starts": starts, "line": line}


def _at_capacity(s: CapacitySummary) -> dict[str, Any]:
    """The start's capacity and the probe it held there (what the decision sizes the profile from)."""
    held = next((p for p in s.probes if p.rate_req_s == s.capacity.rate_req_s and p.verdict == "MEETS"), None)
    return {"upper": s.capacity.upper_rate_req_s, "bound": s.capacity.model_dump(mode="json"),
            "probe": held.model_dump(mode="json") if held else None}  # fmt: skip
