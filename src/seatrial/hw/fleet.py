"""``seatrial hw --ray ADDRESS``: the same Stage 1 trials on every alive node of a Ray cluster, one task
pinned to each node (node affinity, not soft), and the fleet view: a GPU (or a node, for collectives)
whose BF16 / FP8 TFLOP/s, burn throughput or collective bus bandwidth lies more than ``margin`` below the
fleet's median is REVIEW_REQUIRED with the figures, even when it passes its own absolute checks.
A node that does not answer is UNAVAILABLE with the reason; nothing here needs a GPU on the driver."""

from __future__ import annotations

import socket
import statistics
from typing import Any

from seatrial.errors import ConfigError
from seatrial.hw.models import HwConfig
from seatrial.runs.result import TrialResult
from seatrial.verdict import Verdict

#: (fleet trial name, the trial it reads, how to read its figure from the evidence)
FLEET_METRICS = (
    ("fleet.precision.bf16", "precision.bf16", "tflops"),
    ("fleet.precision.fp8", "precision.fp8", "tflops"),
    ("fleet.burn", "burn", "tflops"),
    ("fleet.collectives", "collectives", "busbw_max_gbps"),
)


def figure(trial: dict[str, Any], key: str) -> float | None:
    if trial["verdict"] in ("UNAVAILABLE", "UNSUPPORTED"):
        return None
    ev = trial.get("evidence") or {}
    if key == "busbw_max_gbps":
        busbw = ev.get("busbw_gbps") or {}
        values = [v for per_size in busbw.values() for v in per_size.values()]
        return max(values) if values else None
    value = ev.get(key)
    return float(value) if isinstance(value, int | float) else None


def fleet_verdicts(nodes: list[dict[str, Any]], margin: float) -> list[TrialResult]:
    """One row per (node, GPU) and metric measured on two or more of them: PASS, or REVIEW_REQUIRED when
    more than ``margin`` (a share) below the median of all of them."""
    out: list[TrialResult] = []
    for name, trial, key in FLEET_METRICS:
        found = [(n["node"], t.get("gpu"), v) for n in nodes for t in n["trials"]
                 if t["name"] == trial and (v := figure(t, key)) is not None]  # fmt: skip
        if len(found) < 2:
            continue
        median = statistics.median(v for _, _, v in found)
        for node, gpu, value in found:
            share = value / median if median else 1.0
            evidence = {"value": value, "fleet_median": median, "share_of_median": round(share, 4), "margin": margin,
                        "measured": len(found)}  # fmt: skip
            low = share < 1 - margin
            reason = (f"{value:,.1f} is {share:.0%} of the fleet median {median:,.1f} (more than {margin:.0%} below)"
                      if low else None)  # fmt: skip
            out.append(TrialResult(name=name, node=node, gpu=gpu, verdict=Verdict.REVIEW_REQUIRED if low else Verdict.PASS,
                                   reasons=[reason] if reason else [], evidence=evidence))  # fmt: skip
    return out


def _on_node(cfg: dict[str, Any]) -> dict[str, Any]:
    """Runs on the node: the trials, as ``seatrial hw`` runs them there."""
    from seatrial.hw import HwConfig as Config
    from seatrial.hw import run_hw

    run = run_hw(Config.model_validate(cfg))
    return {"sheet": run.report.to_json(), "hostname": socket.gethostname()}


def pick_nodes(alive: list[dict[str, Any]], wanted: str) -> list[dict[str, Any]]:
    """``all``, or node IDs (or their first characters), addresses or hostnames, comma-separated."""
    if wanted.strip().lower() == "all":
        return alive
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    chosen = [n for n in alive if any(n["NodeID"].startswith(w) or w in (n["NodeManagerAddress"],
              n.get("NodeManagerHostname")) for w in names)]  # fmt: skip
    if len(chosen) < len(names):
        known = ", ".join(f"{n['NodeID'][:12]} ({n['NodeManagerAddress']})" for n in alive)
        raise ConfigError(f"--nodes {wanted}: not every name is an alive node; alive: {known}")
    return chosen


def run_hw_ray(address: str, cfg: HwConfig, nodes: str = "all", margin: float = 0.10,
               timeout_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Every chosen node's sheet and the fleet view (see the module docstring)."""
    from seatrial.raycluster import alive_nodes, on_each_node

    chosen = pick_nodes(alive_nodes(address), nodes)
    limit = timeout_s or 600 + 12 * cfg.duration_s
    out = []
    for n, got, why in on_each_node(
        chosen, _on_node, lambda n: (cfg.model_dump(mode="json"),), limit, gpus=True
    ):
        entry: dict[str, Any] = {"node": n["NodeID"], "address": n["NodeManagerAddress"],
                                 "hostname": n.get("NodeManagerHostname")}  # fmt: skip
        if got is not None:
            entry |= {"hostname": got["hostname"], **got["sheet"]}
        else:  # a node that does not answer is UNAVAILABLE, not a crash
            entry |= {"gpus": [], "trials": [TrialResult(name="node", node=n["NodeID"], verdict=Verdict.UNAVAILABLE,
                                                          reasons=[f"node did not answer: {why}"]).to_json()]}  # fmt: skip
        for t in entry["trials"]:
            t["node"] = n["NodeID"]
        out.append(entry)
    fleet = fleet_verdicts(out, margin)
    return {"nodes": out, "fleet": [t.to_json() for t in fleet], "margin": margin}
