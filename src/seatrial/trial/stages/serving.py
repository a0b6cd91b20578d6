"""Stage 4, serving (seed 004's Stage 3a): each remaining candidate launched under ``seatrial guard`` and
``seatrial accept``'s profile run against it. A candidate that does not start, or whose trials FAIL, is dropped
with the reason (one whose trials ask for review is kept, and the stage asks too); the stage FAILs when none is
left."""

from __future__ import annotations

from typing import Any

from seatrial.errors import EngineError, SeatrialError
from seatrial.server.process import free_port
from seatrial.trial.context import Outcome, TrialContext, brief, candidate_serve, judged
from seatrial.trial.plan import Candidate

ENGINE_EXIT = 5


def run(ctx: TrialContext) -> Outcome:
    per: dict[str, dict[str, Any]] = {}
    dropped: dict[str, str] = {}
    for cand in ctx.remaining():
        ctx.log(f"   {cand.name}: starting under seatrial guard")
        per[cand.name] = got = _one(ctx, cand)
        ctx.log(f"   {cand.name}: {got['line']}")
        if got["verdict"] == "FAIL":
            dropped[cand.name] = f"serving: {got['line']}"
    data = {"candidates": per, "dropped": dropped}
    if not per:
        return Outcome("UNAVAILABLE", "no candidate left to launch", data)
    if len(dropped) == len(per):
        code = ENGINE_EXIT if all(p.get("engine_error") for p in per.values()) else 1
        return Outcome("FAIL", "no candidate passed: " + "; ".join(f"{k}: {v}" for k, v in dropped.items()), data, code)
    review = [k for k, p in per.items() if p["verdict"] not in ("PASS", "FAIL")]
    if dropped or review:
        said = [f"dropped {', '.join(dropped)}" if dropped else "", f"review {', '.join(review)}" if review else ""]
        return Outcome("REVIEW_REQUIRED", "; ".join(filter(None, said)), data, 1)
    return Outcome("PASS", f"{len(per)} candidate(s) passed accept", data)


def _one(ctx: TrialContext, cand: Candidate) -> dict[str, Any]:
    from seatrial.runs.result import read_trials
    from seatrial.trials import run_accept

    st = ctx.plan.stages.serving
    serve = candidate_serve(ctx, cand)
    folder = ctx.folder("serving") / cand.name
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    try:
        server = serve.start(serve.argv([], port, folder / "guard-history.jsonl"), folder / "server.log", port, {})
    except EngineError as exc:
        return {"verdict": "FAIL", "engine_error": True, "line": f"did not start: {brief(exc)}"}
    try:
        summary = run_accept(server.url, profile=st.profile, trials=st.trials, scale=st.scale,
                             out_dir=folder / "accept")  # fmt: skip
        verdict = judged(read_trials(summary["trials"]), "accept")
    except SeatrialError as exc:
        return {"verdict": "FAIL", "line": f"accept did not run: {brief(exc)}", "startup_s": server.ready_s}
    finally:
        server.stop(serve.stop_grace_s)
    return {"verdict": verdict.verdict, "line": verdict.reason, "verdicts": {t["name"]: t["verdict"] for t in summary["trials"]},
            "startup_s": server.ready_s, "folder": f"{folder.name}/accept"}  # fmt: skip
