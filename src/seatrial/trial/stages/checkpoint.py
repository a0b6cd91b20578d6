"""Stage 0, the checkpoint: audited, then every candidate planned on the declared hardware; a candidate that does
not fit is dropped before any start, with the plan's reason; a conversion declared for a candidate runs here."""

from __future__ import annotations

from typing import Any

from seatrial.errors import SeatrialError
from seatrial.runs.folder import record
from seatrial.runs.summaries.trial import CheckpointSummary
from seatrial.trial.context import Outcome, TrialContext, brief
from seatrial.trial.plan import Candidate

BAD_CHECKPOINT_EXIT = 3


def run(ctx: TrialContext) -> Outcome:
    from seatrial.checkpoint import audit

    if ctx.checkpoint.is_file():  # a GGUF (llama.cpp): nothing here reads one
        return _gguf(ctx)
    report = audit(ctx.checkpoint).model_dump(mode="json")
    errors = [f["message"] for f in report["findings"] if f["severity"] == "error"]
    summary: dict[str, Any] = {"audit": report, "candidates": {}}
    if errors:
        _record(ctx, summary)
        return Outcome("FAIL", f"the audit found {len(errors)} error(s): {errors[0]}", exit_code=BAD_CHECKPOINT_EXIT)
    ctx.log(f"   audit: {report['total_bytes']:,} bytes, {report['total_params']:,} parameters")
    models: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for cand in ctx.plan.candidates:
        try:
            if cand.convert is not None:
                models[cand.name] = str(_convert(ctx, cand))
            fit = _plan(ctx, cand, models.get(cand.name))
        except SeatrialError as exc:
            fit = {"fits": False, "reason": brief(exc)}
        summary["candidates"][cand.name] = fit
        if not fit["fits"]:
            dropped[cand.name] = f"does not fit: {fit['reason']}"
        ctx.log(f"   {cand.name}: {'fits' if fit['fits'] else 'dropped, ' + fit['reason']}")
    _record(ctx, summary)
    data = {"models": models, "dropped": dropped, "plans": summary["candidates"]}
    if len(dropped) == len(ctx.plan.candidates):
        return Outcome("FAIL", "no candidate fits: " + "; ".join(f"{k} {v}" for k, v in dropped.items()), data, 1)
    kept = len(ctx.plan.candidates) - len(dropped)
    return Outcome("PASS", f"{kept} of {len(ctx.plan.candidates)} candidates fit", data)


def _record(ctx: TrialContext, summary: dict[str, Any]) -> None:
    """Stage 0's run folder, its summary through the model the report reads it with."""
    record(ctx.folder("checkpoint"), "trial-checkpoint", {"checkpoint": str(ctx.checkpoint)},
           CheckpointSummary.model_validate(summary))  # fmt: skip


def _convert(ctx: TrialContext, cand: Candidate) -> Any:
    from seatrial.checkpoint.convert import ConvertOptions, convert_checkpoint

    dst = ctx.folder("checkpoint") / f"{cand.name}-converted"
    result = convert_checkpoint(ConvertOptions.model_validate({**(cand.convert or {}), "src": ctx.checkpoint, "dst": dst}))
    ctx.log(f"   {cand.name}: converted, total_size {result.total_size_before:,} -> {result.total_size_after:,}")
    return dst


def _plan(ctx: TrialContext, cand: Candidate, model: str | None) -> dict[str, Any]:
    """The memory plan's verdict for ``cand`` (fits, with the first error finding as the reason); a candidate
    without a ``plan:`` fits unchecked, said so."""
    if cand.plan is None:
        return {"fits": True, "reason": "no plan: settings given, so not checked", "checked": False}
    from seatrial.plan import check_launch

    result = check_launch(model or ctx.checkpoint, hardware=ctx.plan.deployment.hardware, **cand.plan.model_dump())
    bad = [f.message for f in result.findings if f.severity == "error"]
    return {
        "fits": result.fits,
        "reason": bad[0] if bad else ("fits" if result.fits else "does not fit"),
        "checked": True,
        "kv_cache_tokens": result.kv_cache_tokens,
        "max_concurrency": result.max_concurrency,
        "ledger": result.render_ledger(),
    }


def _gguf(ctx: TrialContext) -> Outcome:
    """A GGUF checkpoint: the audit, the memory plan and convert read safetensors, so none of them runs; a
    candidate that asks for a plan or a conversion is dropped, said."""
    asks = {c.name: "plan:" if c.plan else "convert:" for c in ctx.plan.candidates if c.plan or c.convert}
    dropped = {name: f"{what} reads a safetensors checkpoint, not {ctx.checkpoint.name}" for name, what in asks.items()}
    _record(ctx, {"gguf": str(ctx.checkpoint), "bytes": ctx.checkpoint.stat().st_size})
    data = {"dropped": dropped}
    if len(dropped) == len(ctx.plan.candidates):
        return Outcome("FAIL", "no candidate left: " + "; ".join(f"{k} {v}" for k, v in dropped.items()), data, 1)
    return Outcome("UNAVAILABLE", f"{ctx.checkpoint.name} is a GGUF file: audit and memory plan read safetensors", data)

