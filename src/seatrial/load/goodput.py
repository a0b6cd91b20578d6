"""Goodput: the requests that met a service-level objective, as vLLM's ``--goodput`` counts them.

A request is *good* when it succeeded and meets every bound of the SLO (``ttft_ms``, ``tpot_ms``,
``e2e_ms``, in milliseconds: value <= bound). A request with fewer than two output tokens has no TPOT
and meets a TPOT bound (vLLM counts its TPOT as 0). Attainment is good / measured requests, failed ones
included, with a Wilson interval (seatrial.stats.proportions) over batches of consecutive requests in send
order, each twice the good/bad series' correlation time long (at least a multiple of the others the level
held in flight: seatrial.stats.proportions.least_correlation), that time the interval's least design
effect: requests that shared the server's queue are not independent, whichever client worker sent them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from seatrial.load.metric_table import METRICS, SLO_METRICS
from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.bench import Goodput
from seatrial.stats.proportions import data_batches, least_correlation, share_ci


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
        value = METRICS[name].value(functools.partial(getattr, rec))
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
    in_flight: float = 0.0,
    open_loop: bool = False,
) -> Goodput:
    """The level's goodput over ``records`` (measured ones), which held ``in_flight`` requests in flight on
    average under an open or a closed loop."""
    ordered = sorted(records, key=lambda r: r.sent_ms)
    outcomes = [is_good(r, slo) for r in ordered]
    good_tokens = sum(r.output_tokens or 0 for r, ok in zip(ordered, outcomes, strict=True) if ok)
    good, total, tau = data_batches(outcomes, least_correlation(in_flight, open_loop))
    share = share_ci(good, total, confidence, min_deff=tau)
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
