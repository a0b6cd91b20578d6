"""Stage 3, the fleet: on several nodes, the checkpoint replicated to each node's place (``seatrial sync``, every
byte verified) and every node's contract compared (``seatrial doctor``); a difference stops the trial. On one node
there is nothing to replicate or compare: UNAVAILABLE, said."""

from __future__ import annotations

from seatrial.runs.folder import record
from seatrial.trial.context import Outcome, TrialContext


def run(ctx: TrialContext) -> Outcome:
    from seatrial.fleet.doctor import doctor
    from seatrial.fleet.sync import sync

    places = ctx.plan.deployment.places
    if not places:
        return Outcome("UNAVAILABLE", "one node: nothing to replicate or compare (deployment.nodes is not a list)")
    if not ctx.checkpoint.is_dir():
        return Outcome("UNAVAILABLE", f"{ctx.checkpoint.name} is a file: sync and doctor replicate a folder")
    folder = ctx.folder("fleet")
    synced = sync(ctx.checkpoint, places, verify="full")
    record(folder / "sync", "sync", {"src": str(ctx.checkpoint), "dests": places}, synced)
    if not synced.ok:
        bad = [f"{d.dest}: {d.error or d.differences}" for d in synced.destinations if not d.ok]
        return Outcome("FAIL", f"sync: {bad[0]}", exit_code=synced.exit_code())
    ctx.log(f"   sync: {len(places)} node(s) hold the checkpoint, every byte verified")
    checked = doctor([f"local:{ctx.checkpoint}", *places])
    record(folder / "doctor", "doctor", {"nodes": ["local", *places]}, checked)
    if not checked.passed:
        first = checked.differences[0] if checked.differences else next(iter(checked.unreachable.values()), "")
        return Outcome("FAIL", f"doctor: {first}", exit_code=checked.exit_code())
    return Outcome("PASS", f"sync and doctor: {len(places) + 1} places hold one contract ({len(checked.items)} items)")
