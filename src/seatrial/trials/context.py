"""``context``: short and long prompts (seed 004 §7); TTFT and ITL for each.

The long length is the profile's, cut to the server's ``max_model_len`` (minus the output) when the
server states one. A long prompt the server rejects is reported with the server's error. When the
limit is known, one prompt of ``max_model_len + 1`` tokens checks that the server refuses it cleanly
(an HTTP 4xx with a message, not a dropped connection or a 5xx).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from seatrial.errors import ServerError
from seatrial.load.client import send
from seatrial.load.config import WorkloadConfig
from seatrial.load.records import RequestRecord
from seatrial.load.workloads import random_specs
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.stats import median_ci, min_samples, percentile_ci
from seatrial.trials.configs import TrialConfig
from seatrial.trials.env import TrialEnv, brief, first_error, ok_values


class ContextConfig(TrialConfig):
    short_len: int = Field(1024, ge=1)
    long_len: int = Field(32768, ge=1)
    output_len: int = Field(32, ge=2)
    requests: int = Field(20, ge=1)


async def measure(env: TrialEnv, input_len: int) -> dict[str, Any]:
    cfg = env.profile.config(ContextConfig)
    wl = WorkloadConfig(name="random", input_len=input_len, output_len=cfg.output_len)
    try:
        level = await env.level(wl, 1, cfg.requests)
    except ServerError as exc:
        return {"input_len": input_len, "ok": False, "n": 0, "error": str(exc)}
    recs = level.records
    itl = [x for r in recs if r.ok for x in r.itl_ms]
    return {
        "input_len": input_len,
        "ok": all(r.ok for r in recs) and level.summary.valid,
        "valid": level.summary.valid,
        "invalid_reasons": level.summary.invalid_reasons,
        "n": sum(r.ok for r in recs),
        "error": first_error(recs),
        "ttft_ms_p50": median_ci(ok_values(recs, "ttft_ms")).model_dump(),
        "itl_ms_p50": median_ci(itl).model_dump(),
        "itl_ms_p99": percentile_ci(itl, 99).model_dump(),
        "level": brief(level.summary),
    }


async def over_limit(env: TrialEnv, max_model_len: int) -> dict[str, Any]:
    """Send ``max_model_len + 1`` prompt tokens; ``ok`` when the server refuses with a 4xx."""
    n = max_model_len + 1
    try:
        spec = (await random_specs(env.session.tokenizer, random.Random(n), 1, n, 1, "over", True))[0]
    except ServerError as exc:
        return {"prompt_tokens": n, "ok": None, "error": f"could not build the prompt: {exc}"}
    rec = RequestRecord(request_id=f"X{env.next_index()}-over", phase="measure", concurrency=1, kind="over")
    await send(env.session.http, env.session.endpoint, spec, rec)
    env.store(rec)
    clean = rec.status is not None and 400 <= rec.status < 500
    return {"prompt_tokens": n, "ok": clean, "status": rec.status, "error": rec.error}


async def run(env: TrialEnv) -> TrialResult:
    cfg = env.profile.config(ContextConfig)
    limit = env.info.max_model_len
    long_len = cfg.long_len if not limit else min(cfg.long_len, limit - cfg.output_len)
    short, long = await measure(env, cfg.short_len), await measure(env, long_len)
    if long_len != cfg.long_len:
        long["clamped_from"] = cfg.long_len
    probe = await over_limit(env, limit) if limit else None
    need = min_samples(50)
    if not short["ok"] or not long["ok"]:
        bad = short if not short["ok"] else long
        if bad.get("error") is None and bad.get("valid") is False:
            why = f"{bad['input_len']}-token level invalid: {'; '.join(bad['invalid_reasons'])}"
        else:
            why = f"{bad['input_len']}-token prompts failed: {bad['error']}"
        v = Verdict.FAIL
    elif probe is not None and probe["ok"] is False:
        v, why = (
            Verdict.FAIL,
            f"a {probe['prompt_tokens']}-token prompt was not refused cleanly: {probe['error']}",
        )
    elif min(short["n"], long["n"]) < need:
        v, why = Verdict.INCONCLUSIVE, f"{min(short['n'], long['n'])} requests per length < {need}"
    else:
        v, why = Verdict.PASS, f"{cfg.short_len}- and {long_len}-token prompts served"
    return TrialResult(
        name="context",
        verdict=v,
        reasons=[why],
        samples={"short_requests": short["n"], "long_requests": long["n"]},
        evidence={"short": short, "long": long, "over_limit": probe, "max_model_len": limit},
    )
