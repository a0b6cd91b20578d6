"""What ``--resume`` keeps: ``trial-state.json`` in the trial's folder, the plan that ran (every env value as its
digest: no secret on disk) and per stage its fingerprint, whether it completed, its time and its outcome.

A stage's fingerprint hashes the plan's keys it reads (:data:`PLAN_KEYS`) and the fingerprints of the stages whose
outcome it reads (``stages.READS``): a finished stage is reused while its fingerprint holds and none of those
stages ran again; an edited plan names its changed keys and so the stages they reach.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from seatrial.trial.context import Outcome
from seatrial.trial.plan import TrialPlan
from seatrial.trial.stages import READS

STATE = "trial-state.json"

#: the plan's keys each stage reads
PLAN_KEYS: dict[str, tuple[str, ...]] = {
    "checkpoint": ("deployment.checkpoint", "deployment.tiny_model", "deployment.hardware", "candidates"),
    "hardware": ("deployment.nodes", "stages.hardware"),
    "io": ("deployment.nodes", "deployment.checkpoint", "stages.io"),
    "fleet": ("deployment.nodes", "deployment.checkpoint"),
    "serving": ("serve", "candidates", "stages.serving"),
    "capacity": ("serve", "candidates", "profiles", "stages.capacity"),
    "decision": ("profiles", "candidates", "deployment.gpu_hour_usd", "stages.capacity"),
}


#: what a stage reads of a key, where it reads only part of it: the memory plan not a candidate's args, the
#: capacity search not a profile's peak
PARTS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("checkpoint", "candidates"): lambda v: [{k: c.get(k) for k in ("name", "plan", "convert")} for c in v or []],
    ("capacity", "profiles"): lambda v: [{k: x for k, x in p.items() if k != "peak_req_s"} for p in v or []],
}


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_doc(plan: TrialPlan) -> dict[str, Any]:
    """The plan as JSON, every ``env`` value replaced by its digest."""

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: (_digest(str(x)) if key == "env" else walk(x, k)) for k, x in v.items()}
        return [walk(x) for x in v] if isinstance(v, list) else v

    out: dict[str, Any] = walk(plan.model_dump(mode="json"))
    return out


def _at(doc: dict[str, Any], dotted: str) -> Any:
    v: Any = doc
    for part in dotted.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def fingerprint(doc: dict[str, Any], stage: str, upstream: dict[str, str]) -> str:
    keys = [PARTS.get((stage, k), lambda v: v)(_at(doc, k)) for k in PLAN_KEYS[stage]]
    parts = [keys, [upstream.get(r, "") for r in READS[stage]]]
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def fingerprints(doc: dict[str, Any]) -> dict[str, str]:
    """Every stage's fingerprint, in order (a stage reads only earlier ones)."""
    out: dict[str, str] = {}
    for stage in PLAN_KEYS:
        out[stage] = fingerprint(doc, stage, out)
    return out


def changes(old: Any, new: Any, path: str = "") -> list[str]:
    """The plan's keys that differ, dotted; a named list's items by name (``candidates[seqs-8].args``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [c for k in sorted(old.keys() | new.keys()) for c in changes(old.get(k), new.get(k), f"{path}.{k}".strip("."))]
    if isinstance(old, list) and isinstance(new, list) and all(isinstance(x, dict) and "name" in x for x in old + new):
        a, b = ({x["name"]: x for x in side} for side in (old, new))
        return [c for n in sorted(a.keys() | b.keys()) for c in changes(a.get(n), b.get(n), f"{path}[{n}]")]
    return [] if old == new else [path or "(plan)"]


def read_state(out: Path) -> dict[str, Any]:
    from seatrial.errors import ConfigError
    from seatrial.runs.folder import read_run_json

    if not (out / STATE).is_file():
        raise ConfigError(f"--resume: {out} holds no trial (no {STATE})")
    return read_run_json(out / STATE)


def write_state(out: Path, doc: dict[str, Any], stages: dict[str, Any]) -> None:
    from seatrial.runs.folder import write_redacted

    write_redacted(out / STATE, {"plan": doc, "stages": stages})


def outcome_of(entry: dict[str, Any]) -> Outcome:
    o = entry["outcome"]
    return Outcome(o["verdict"], o.get("reason"), o.get("data") or {}, o.get("exit_code", 0))


def entry(fp: str, outcome: Outcome, seconds: float, completed: bool) -> dict[str, Any]:
    o = {"verdict": outcome.verdict, "reason": outcome.reason, "data": outcome.data, "exit_code": outcome.exit_code}
    return {"fingerprint": fp, "completed": completed, "seconds": round(seconds, 3), "outcome": o}
