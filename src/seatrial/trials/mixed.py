"""``mixed``: how much long-prefill requests hurt short interactive ones (crossover rounds).

In a MIX phase, ``long_concurrency`` users send long-prefill requests (output 1 token) back to back
while the short requests run; every long prompt starts with its phase tag and number, so no two in
the trial share a cached prefix. ITL p99 / p50 of the short decode streams in MIX phases shows head-of-line blocking (seed 001).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from seatrial.load.client import send
from seatrial.load.records import RequestRecord
from seatrial.load.workloads import RequestSpec
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.stats import median, min_samples
from seatrial.trials.env import TrialEnv, first_error, ok_values
from seatrial.trials.mixed_rules import MixedConfig, Round, crossover, order_of, verdict

HEADROOM_TOKENS = 64  # room for the output token and each long prompt's tag


async def long_load(
    env: TrialEnv, base: RequestSpec, users: int, tag: str, stop: asyncio.Event
) -> list[RequestRecord]:
    """Long-prefill requests back to back from ``users`` users until ``stop`` is set."""
    records: list[RequestRecord] = []
    s = env.session

    async def user(u: int) -> None:
        i = u
        while not stop.is_set():
            spec = RequestSpec(f"{tag}-{i} {base.prompt}", 1, None, "long", True)
            rec = RequestRecord(request_id=f"{tag}-{i:05d}", phase="measure", concurrency=users, kind="long")
            await send(s.http, s.endpoint, spec, rec)
            records.append(rec)
            env.store(rec)
            if not rec.ok:
                return  # a rejected long prompt is reported, not retried in a tight loop
            i += users

    await asyncio.gather(*(user(u) for u in range(users)))
    return records


async def phase(
    env: TrialEnv, mix: bool, tag: str, long_spec: RequestSpec
) -> tuple[list[RequestRecord], list[RequestRecord]]:
    cfg = env.profile.config(MixedConfig)
    shorts = await env.specs(cfg.short_requests, cfg.short_input_len, cfg.short_output_len, "short")
    stop = asyncio.Event()
    longs_task = (
        asyncio.create_task(long_load(env, long_spec, cfg.long_concurrency, f"{tag}-long", stop))
        if mix
        else None
    )
    try:
        if longs_task:
            await asyncio.sleep(0.05)  # the first long prefills are in the server before shorts arrive
        recs, _ = await env.send_all(shorts, cfg.short_concurrency, f"{tag}-{'mix' if mix else 'iso'}")
    finally:
        stop.set()
    longs = await longs_task if longs_task else []
    return recs, longs


def long_share(longs: list[RequestRecord], shorts: list[RequestRecord]) -> float | None:
    """Time-weighted share of the MIX phase (first short send to last short end) with a long request
    in flight; None when no short request ran."""
    spans = [(r.send_ns, r.send_ns + int((r.e2e_ms or 0.0) * 1e6)) for r in shorts]
    if not spans:
        return None
    start, end = min(a for a, _ in spans), max(b for _, b in spans)
    if end <= start:
        return None
    covered, reach = 0, start
    for a, b in sorted(
        (max(r.send_ns, start), min(r.send_ns + int((r.e2e_ms or 0.0) * 1e6), end)) for r in longs
    ):
        if b <= reach:
            continue
        covered += b - max(a, reach)
        reach = b
    return covered / (end - start)


def itl_tail(records: list[RequestRecord]) -> dict[str, float | None]:
    """ITL p50, p99 and p99 / p50 over the decode streams; the ratio is None when the median gap is 0
    (tokens that arrive together in one network read share a timestamp)."""
    itl = [x for r in records if r.ok for x in r.itl_ms]
    if not itl:
        return {"p50": None, "p99": None, "p99_over_p50": None}
    p50, p99 = (float(v) for v in np.percentile(itl, [50, 99]))
    return {"p50": p50, "p99": p99, "p99_over_p50": p99 / p50 if p50 > 0 else None}


async def run(env: TrialEnv) -> TrialResult:
    cfg = env.profile.config(MixedConfig)
    long_len = cfg.long_input_len
    if env.info.max_model_len:
        long_len = min(long_len, env.info.max_model_len - HEADROOM_TOKENS)
    long_spec = (await env.specs(1, long_len, 1, "long"))[0]
    rounds: list[Round] = []
    iso_all: list[RequestRecord] = []
    mix_all: list[RequestRecord] = []
    longs_all: list[RequestRecord] = []
    shares: list[float | None] = []
    for r in range(cfg.rounds):
        order = order_of(r)
        got: dict[bool, list[RequestRecord]] = {}
        for mix in (False, True) if order == "ISO->MIX" else (True, False):
            got[mix], longs = await phase(env, mix, f"M{env.next_index()}-R{r}", long_spec)
            longs_all += longs
            if mix:
                shares.append(long_share(longs, got[mix]))
        iso, mixed = got[False], got[True]
        if r > 0:
            iso_all += iso
            mix_all += mixed
        rounds.append(
            Round(
                index=r,
                order=order,
                iso_ttft_ms_p50=median(ok_values(iso, "ttft_ms")),
                mix_ttft_ms_p50=median(ok_values(mixed, "ttft_ms")),
                iso_n=sum(x.ok for x in iso),
                mix_n=sum(x.ok for x in mixed),
            )
        )
    x = crossover(rounds)
    phase_n = min([min(r.iso_n, r.mix_n) for r in rounds if r.retained] or [0])
    v, why = verdict(x, cfg, min_samples(50), phase_n)
    failed = [r for r in (*iso_all, *mix_all) if not r.ok]
    long_failed = [r for r in longs_all if not r.ok]
    if failed:
        v, why = Verdict.FAIL, f"{len(failed)} short requests failed: {first_error(failed)}"
    elif len(long_failed) == len(longs_all):
        v, why = (
            Verdict.INCONCLUSIVE,
            f"no long request was served, so nothing was mixed: {first_error(longs_all)}",
        )
    elif thin := [(r, sh) for r, sh in enumerate(shares) if r > 0 and (sh or 0.0) < cfg.min_long_share]:
        r, sh = thin[0]
        v, why = (
            Verdict.INCONCLUSIVE,
            (
                f"R{r}: a long prefill was in flight for {(sh or 0.0):.0%} of the MIX phase (< "
                f"{cfg.min_long_share:.0%}), so it did not measure interference"
                + (f"; long requests failed: {first_error(long_failed)}" if long_failed else "")
            ),
        )
    evidence: dict[str, Any] = {
        "rounds": [
            rd.model_dump()
            | {"degradation_pct": rd.degradation_pct, "retained": rd.retained, "mix_long_share": sh}
            for rd, sh in zip(rounds, shares, strict=True)
        ],
        "min_long_share": cfg.min_long_share,
        **x.model_dump(),
        "itl_ms_mix": itl_tail(mix_all),
        "itl_ms_iso": itl_tail(iso_all),
        "long_input_len": long_len,
        "long_requests": len(longs_all),
        "long_requests_failed": len(long_failed),
        "long_first_error": first_error(long_failed),
    }
    return TrialResult(
        name="mixed",
        verdict=v,
        reasons=[why],
        samples={
            "rounds_retained": x.retained,
            "short_requests_per_phase": phase_n,
            "long_requests": len(longs_all),
        },
        evidence=evidence,
    )
