"""The cross-stage diagnosis (seed 004 section 18): every symptom stages 4-5 wrote, with the stage 0-2 evidence
that explains it or rules it out, each line naming the file it was read from (under the trial's folder).

Symptoms: what set each capacity start's limit (``capacity.limits``' classes, read from its ``summary.json``),
each accept trial that did not pass, and a start-up slower than the storage stage predicts for the checkpoint.
Evidence: the hardware stage's verdicts (a GPU trial that did not pass is suspected; none measured cannot rule
the hardware out), the memory plan's KV cache for KV pressure, the storage load time for a slow start.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seatrial.runs.stored import read_run
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.runs.summaries.capacity import CapacitySummary
from seatrial.runs.summaries.trial import DiagnosisRow
from seatrial.runs.verdicts import BLOCKING, NOT_MEASURED
from seatrial.trial.context import TrialContext

#: capacity.limits' class -> (the symptom, the suspect when the hardware passed)
LIMITS: dict[str, tuple[str, str]] = {
    "QUEUE_SATURATION": ("TTFT high: requests queue while throughput is flat", "suspect scheduling (max-num-seqs)"),
    "THROUGHPUT_PLATEAU": ("TPOT/ITL high: every running request decodes more slowly",
                           "suspect the batch size (max-num-seqs, max-num-batched-tokens)"),
    "SLO_CLIFF": ("TTFT high with no queue the engine shows", "suspect prefill (long prompts, chunked prefill)"),
    "CLIENT_BOUND": ("the client did not deliver the load", "not the server: give seatrial more CPU or workers"),
}  # fmt: skip
#: a slow start is one this many times the storage stage's predicted load time, and at least this many seconds
SLOW_START_FACTOR, SLOW_START_S = 3.0, 30.0


def diagnose(ctx: TrialContext) -> list[DiagnosisRow]:
    rows = [*_capacity(ctx), *_serving(ctx), *_startup(ctx)]
    return list({(r.symptom, r.evidence, r.source): r for r in rows}.values())


def _rel(ctx: TrialContext, path: Path) -> str:
    return str(path.relative_to(ctx.out))


def _hardware(ctx: TrialContext) -> str:
    """The hardware stage's word on a server symptom: the trials that did not pass (suspects), or that it passed."""
    got = ctx.outcomes.get("hardware")
    where = f"{ctx.folder('hardware').name}/summary.json"
    if got is None or got.verdict == "UNAVAILABLE" or not got.data.get("verdicts"):
        return f"hardware not measured ({where if got else 'stage not run'}): cannot rule it out"
    bad = {k: v for k, v in got.data["verdicts"].items() if v in BLOCKING}  # not PASS, nor a trial not measured
    if bad:
        return f"hardware ({where}): {', '.join(f'{k} {v}' for k, v in sorted(bad.items()))}: suspect the GPU first"
    verdicts = got.data["verdicts"].values()
    unmeasured = sum(v in NOT_MEASURED for v in verdicts)
    return (f"hardware ({where}): {sum(v == 'PASS' for v in verdicts)} trials passed"
            + (f", {unmeasured} not measured" if unmeasured else "") + ", no throttle or fault")  # fmt: skip


def _capacity(ctx: TrialContext) -> Iterator[DiagnosisRow]:
    for path in sorted(ctx.folder("capacity").glob("*/start-*/summary.json")):
        start = read_run(path.parent).summary
        if not isinstance(start, CapacitySummary):
            continue
        cls = start.limit.classification
        where = f"{path.parent.parent.name} {path.parent.name}: {start.limit.reason}"
        if cls == "KV_PRESSURE":
            yield DiagnosisRow(symptom=f"KV pressure ({where})", evidence=_kv(ctx, path), source=_rel(ctx, path))
        elif cls in LIMITS:
            symptom, suspect = LIMITS[cls]
            hw = _hardware(ctx) if cls != "CLIENT_BOUND" else ""
            evidence = hw if "suspect the GPU" in hw else "; ".join(filter(None, (hw, suspect)))
            yield DiagnosisRow(symptom=f"{symptom} ({where})", evidence=evidence, source=_rel(ctx, path))


def _kv(ctx: TrialContext, path: Path) -> str:
    cand = path.parent.parent.name.split("--")[0]
    fit = ctx.data("checkpoint").get("plans", {}).get(cand, {})
    src = f"{ctx.folder('checkpoint').name}/summary.json"
    if fit.get("kv_cache_tokens"):
        return (f"the memory plan ({src}) gives {fit['kv_cache_tokens']:,} KV tokens, {fit.get('max_concurrency')} "
                "sequences at max_model_len: raise gpu_memory_utilization, lower max-num-seqs, or a KV cache dtype")  # fmt: skip
    return f"no memory plan for {cand} ({src}): give it a plan: to see its KV cache"


def _serving(ctx: TrialContext) -> Iterator[DiagnosisRow]:
    for path in sorted(ctx.folder("serving").glob("*/accept/summary.json")):
        accepted = read_run(path.parent).summary
        for t in accepted.trials if isinstance(accepted, AcceptSummary) else []:
            if t.verdict not in BLOCKING:  # PASS, or not measured (UNAVAILABLE, UNSUPPORTED): no symptom
                continue
            reason = "; ".join(t.reasons or []) or t.verdict
            symptom = "prefix hits 0" if t.name == "prefix-cache" else f"accept {t.name} {t.verdict}"
            yield DiagnosisRow(symptom=f"{symptom} ({path.parent.parent.name}: {reason})", evidence=_hardware(ctx),
                               source=_rel(ctx, path))  # fmt: skip


def _startup(ctx: TrialContext) -> Iterator[DiagnosisRow]:
    figures: dict[str, dict[str, Any]] = ctx.data("io").get("figures", {})
    predicted = [f["predicted_load_s"] for k, f in figures.items() if k.endswith("storage.load") and f.get("predicted_load_s")]
    rows = ctx.data("capacity").get("rows", {})
    for cand, per in rows.items():
        for prof, r in per.items():
            for s in r["starts"]:
                took = s.get("startup_s")
                if not took or took < SLOW_START_S or (predicted and took < SLOW_START_FACTOR * max(predicted)):
                    continue
                src = f"{ctx.folder('capacity').name}/{cand}--{prof}/summary.json"
                why = (f"storage ({ctx.folder('io').name}/summary.json) predicts {max(predicted):.1f} s to read the checkpoint: "
                       "not the disk; suspect compilation or CUDA graphs" if predicted
                       else "storage not measured: cannot rule the disk out")  # fmt: skip
                yield DiagnosisRow(symptom=f"start-up {took:.0f} s ({cand} start {s['start']})", evidence=why, source=src)
