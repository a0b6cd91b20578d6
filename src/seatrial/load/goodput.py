"""Goodput: the requests that met a service-level objective, as vLLM's ``--goodput`` counts them.

A request is *good* when it succeeded and meets every bound of the SLO (``ttft_ms``, ``tpot_ms``,
``e2e_ms``, in milliseconds: value <= bound). A request with fewer than two output tokens has no TPOT
and meets a TPOT bound (vLLM counts its TPOT as 0). Attainment is good / measured requests, failed ones
included, with a Wilson interval (seatrial.stats.proportions): clustered by client worker when several
workers shared the level, and by the caller's clusters (consecutive batches, server starts) where given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.bench import Goodput
from seatrial.stats.proportions import share_ci

SLO_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms")


def parse_slo(text: str | dict[str, float] | None) -> dict[str, float] | None:
    """``ttft_ms:2000,tpot_ms:50`` (or a mapping) -> ``{"ttft_ms": 2000.0, "tpot_ms": 50.0}``; ValueError
    naming what is wrong."""
    if text is None or text == "":
        return None
    pairs = (
        text.items() if isinstance(text, dict) else (p.split(":", 1) for p in text.split(",") if p.strip())
    )
    slo: dict[str, float] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"expected METRIC:MS pairs like ttft_ms:2000,tpot_ms:50, got {text!r}")
        name, value = str(pair[0]).strip(), pair[1]
        if name not in SLO_METRICS:
            raise ValueError(f"unknown SLO metric {name!r}; known: {', '.join(SLO_METRICS)}")
        try:
            bound = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: {value!r} is not a number of milliseconds") from None
        if not math.isfinite(bound) or bound <= 0:
            raise ValueError(
                f"{name}: the bound must be a positive, finite number of milliseconds, got {value!r}"
            )
        if name in slo:
            raise ValueError(f"{name} is bounded twice ({slo[name]:g} and {bound:g}); give each metric once")
        slo[name] = bound
    if not slo:
        raise ValueError("the SLO names no bound")
    return slo


def is_good(rec: RequestRecord, slo: dict[str, float]) -> bool:
    if not rec.ok:
        return False
    for name, bound in slo.items():
        value = rec.tpot_ms if name == "tpot_ms" else getattr(rec, name)
        if value is None:
            if name == "tpot_ms" and (rec.output_tokens or 0) < 2:
                continue
            return False
        if value > bound:
            return False
    return True


def goodput(
    records: Sequence[RequestRecord],
    slo: dict[str, float],
    duration_s: float,
    confidence: float = 0.95,
    clusters: Sequence[int] | None = None,
) -> Goodput:
    """The level's goodput over ``records`` (measured ones); ``clusters`` names each record's cluster
    (default: its client worker, one cluster when a single client sent them all)."""
    keys = list(clusters) if clusters is not None else [r.worker or 0 for r in records]
    good_by: dict[int, int] = {}
    total_by: dict[int, int] = {}
    good_tokens = 0
    for rec, key in zip(records, keys, strict=True):
        ok = is_good(rec, slo)
        good_by[key] = good_by.get(key, 0) + ok
        total_by[key] = total_by.get(key, 0) + 1
        good_tokens += (rec.output_tokens or 0) if ok else 0
    share = share_ci([good_by[k] for k in total_by], list(total_by.values()), confidence)
    return Goodput(
        slo=slo,
        good=share.successes,
        total=share.n,
        attainment=share.share,
        attainment_ci=list(share.ci),
        confidence=confidence,
        method=share.method,
        goodput_req_s=share.successes / duration_s if duration_s > 0 else None,
        goodput_output_tok_s=good_tokens / duration_s if duration_s > 0 else None,
    )
