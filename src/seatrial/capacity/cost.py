"""The capacity per GPU and per dollar, and seed 004's production profile for a target peak rate.

- GPUs: ``--gpus``, else the ``--plan``'s layout (TP x PP x DP: one replica of the measured server).
- Cost per 1M output tokens = GPUs x USD per GPU hour / (output tok/s at the capacity x 3600) x 1e6; its
  ``_upper`` counts only the tokens of good requests at the attainment's lower bound (the share of tokens
  the SLO vouches for).
- Production profile: replicas = ceil(target rate / capacity), the capacity being the measured replica's
  lower bound; each replica then takes target / replicas; its concurrency at that load is Little's law,
  rate x mean E2E of the capacity probe (which ran at a load at least as high, so this is an upper
  estimate).
"""

from __future__ import annotations

import math
from pathlib import Path

from seatrial.load.plancheck import read_plan
from seatrial.runs.summaries.capacity import Capacity, Cost, PerGpu, Probe, ProductionProfile

LAYOUT = ("tp", "pp", "dp", "nodes", "max_num_seqs")


def read_layout(plan: Path | None) -> dict[str, int | None]:
    """TP, PP, DP, nodes and max_num_seqs of a ``seatrial plan --json`` file (all None without one)."""
    if plan is None:
        return dict.fromkeys(LAYOUT)
    result = read_plan(plan)
    return {k: getattr(result, k) for k in LAYOUT}


def gpus_of(layout: dict[str, int | None], gpus: int | None) -> int | None:
    if gpus is not None:
        return gpus
    tp, pp, dp = layout["tp"], layout["pp"], layout["dp"]
    return tp * pp * dp if tp and pp and dp else None


def per_gpu(cap: Capacity, probe: Probe, gpus: int) -> PerGpu:
    rate = cap.rate_req_s if cap.rate_req_s is not None else probe.achieved_rate_req_s
    if rate is None and probe.e2e_ms.mean:
        rate = (cap.concurrency or 0) / (probe.e2e_ms.mean / 1000)
    return PerGpu(
        req_s=rate / gpus if rate is not None else None,
        output_tok_s=probe.output_tok_s / gpus if probe.output_tok_s is not None else None,
    )


def cost(probe: Probe, gpus: int, gpu_hour_usd: float) -> Cost:
    tok_s = probe.output_tok_s

    def usd(tokens_per_s: float | None) -> float | None:
        return gpus * gpu_hour_usd / (tokens_per_s * 3600) * 1e6 if tokens_per_s else None

    good_floor = tok_s * probe.attainment_ci[0] if tok_s is not None else None
    return Cost(gpus=gpus, gpu_hour_usd=gpu_hour_usd, usd_per_1m_output_tokens=usd(tok_s),
                usd_per_1m_output_tokens_upper=usd(good_floor))  # fmt: skip


def production_profile(
    cap: Capacity, probe: Probe, target_rate: float, layout: dict[str, int | None], gpus: int | None,
    gpu_hour_usd: float | None,
) -> ProductionProfile:  # fmt: skip
    replica = cap.rate_req_s if cap.rate_req_s is not None else per_gpu(cap, probe, 1).req_s
    if not replica:
        raise ValueError("the capacity has no request rate")
    replicas = max(1, math.ceil(target_rate / replica - 1e-9))
    each = target_rate / replicas
    e2e = probe.e2e_ms.mean
    total_gpus = gpus * replicas if gpus is not None else None
    return ProductionProfile(
        target_rate_req_s=target_rate,
        layout={k: layout[k] for k in ("tp", "pp", "dp", "nodes")},
        max_num_seqs=layout.get("max_num_seqs"),
        replica_capacity_req_s=replica,
        replicas=replicas,
        gpus=total_gpus,
        hourly_usd=total_gpus * gpu_hour_usd if total_gpus is not None and gpu_hour_usd else None,
        rate_per_replica_req_s=each,
        concurrency_per_replica=each * e2e / 1000 if e2e else None,
        slo=cap.slo,
        attainment_target=cap.attainment_target,
        method="replicas = ceil(target / capacity lower bound); concurrency = rate x mean E2E (Little's law) "
        "at the capacity probe",
    )
