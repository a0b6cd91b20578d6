"""``seatrial hw --ray ADDRESS``: the same Stage 1 trials on every alive node of a Ray cluster, one task
pinned to each node (node affinity, not soft), all under one deadline, and the fleet view.

The fleet rule judges like with like: the figures (BF16 / FP8 TFLOP/s, burn throughput, a node's
collective bus bandwidth) are grouped by kind (GPU model and enforced power limit; for collectives, the
node's set of GPUs), and within a kind of 3 or more a figure is judged against the kind's median with
its robust spread (MAD, scaled by 1.4826 to a normal SD): REVIEW_REQUIRED when more than ``margin``
below the median and outside the spread (robust z below -3, or a spread of 0); INCONCLUSIVE when more
than ``margin`` below but inside a spread that wide (the kind varies too much to single one out), and
when the kind's median is not above 0 (no reference); else PASS. A kind of 1 or 2 gets no relative
verdict: UNAVAILABLE saying so (two cannot say which one is off). A node that does not answer is
UNAVAILABLE with the reason; nothing here needs a GPU on the driver.

The same rule judges the GPUs of one host (:func:`host_verdicts`, seed 004's 8 GPUs of a node): the per-GPU
figures only, rows without a node, and only with 3 or more GPUs selected (a pair cannot say which is off)."""

from __future__ import annotations

import socket
import statistics
from collections.abc import Sequence
from typing import Any

from seatrial.errors import ConfigError
from seatrial.hw.models import HwConfig
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.hw import GpuInfo, HwFleetSummary, HwNode
from seatrial.runs.verdicts import Verdict

#: (fleet trial name, the trial it reads, how to read its figure from the evidence)
FLEET_METRICS = (
    ("fleet.precision.bf16", "precision.bf16", "tflops"),
    ("fleet.precision.fp8", "precision.fp8", "tflops"),
    ("fleet.burn", "burn", "tflops"),
    ("fleet.collectives", "collectives", "busbw_max_gbps"),
)
#: the figures of one GPU each: what the rule compares across the GPUs of one host
HOST_METRICS = tuple(m for m in FLEET_METRICS if m[1] != "collectives")


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


MIN_OF_A_KIND = 3
MAD_TO_SD = 1.4826  # a normal distribution's SD over its MAD
OUTSIDE_Z = 3.0


def kind(node: dict[str, Any], gpu: int | None) -> str:
    """What a figure is compared with: the GPU's model and enforced power limit (for a node's figure,
    its GPUs' kinds and count)."""
    gpus = {g.get("index"): g for g in node.get("gpus") or []}

    def one(g: dict[str, Any] | None) -> str:
        if not g:
            return "GPU of unknown model"
        watts = g.get("power_limit_w")
        return f"{g.get('name') or 'unknown model'} at " + (
            f"{watts:g} W" if watts else "an unknown power limit"
        )

    if gpu is not None:
        return one(gpus.get(gpu))
    kinds = sorted(one(g) for g in gpus.values())
    return ", ".join(f"{kinds.count(k)}x {k}" for k in dict.fromkeys(kinds)) or "node of unknown GPUs"


def fleet_verdicts(
    nodes: list[dict[str, Any]], margin: float, metrics: tuple[tuple[str, str, str], ...] = FLEET_METRICS
) -> list[TrialResult]:
    """One row per (node, GPU) and metric measured: judged against the others of its kind (see the
    module docstring)."""
    out: list[TrialResult] = []
    for name, trial, key in metrics:
        groups: dict[str, list[tuple[str | None, int | None, float]]] = {}
        for n in nodes:
            for t in n["trials"]:
                if t["name"] == trial and (v := figure(t, key)) is not None:
                    groups.setdefault(kind(n, t.get("gpu")), []).append((n["node"], t.get("gpu"), v))
        for of_kind, found in groups.items():
            out += [judge_relative(name, of_kind, found, node, gpu, value, margin) for node, gpu, value in found]
    return out


def host_verdicts(gpus: list[GpuInfo], trials: list[TrialResult], margin: float) -> list[TrialResult]:
    """The rule across the GPUs of one host: each GPU's precision and burn figures against the median of
    the host's like GPUs; none with fewer than MIN_OF_A_KIND GPUs selected."""
    if len(gpus) < MIN_OF_A_KIND:
        return []
    node = {"node": None, "gpus": [g.to_json() for g in gpus],
            "trials": [t.to_json() for t in trials if t.gpu is not None]}  # fmt: skip
    return fleet_verdicts([node], margin, HOST_METRICS)


def judge_relative(name: str, of_kind: str, found: Sequence[tuple[str | None, int | None, float]], node: str | None,
                   gpu: int | None, value: float, margin: float) -> TrialResult:  # fmt: skip
    values = [v for _, _, v in found]
    evidence: dict[str, Any] = {"value": value, "kind": of_kind, "measured": len(values), "margin": margin}
    if len(values) < MIN_OF_A_KIND:
        why = (f"only {len(values)} of its kind ({of_kind}) measured {name.removeprefix('fleet.')}: a relative verdict "
               f"needs {MIN_OF_A_KIND} or more of a kind" + (": two cannot say which one is off" if len(values) == 2 else ""))  # fmt: skip
        return TrialResult(
            name=name, node=node, gpu=gpu, verdict=Verdict.UNAVAILABLE, reasons=[why], evidence=evidence
        )
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    z = (value - median) / (MAD_TO_SD * mad) if mad > 0 else None
    evidence |= {"kind_median": median, "mad": mad, "robust_z": round(z, 2) if z is not None else None}
    if median <= 0:
        why = f"the median of the {len(values)} of its kind ({of_kind}) is {median:g}: no reference to judge against"
        return TrialResult(
            name=name, node=node, gpu=gpu, verdict=Verdict.INCONCLUSIVE, reasons=[why], evidence=evidence
        )
    share = value / median
    evidence["share_of_median"] = round(share, 4)
    verdict, reasons = Verdict.PASS, []
    if share < 1 - margin:
        where = (f"{value:,.1f} is {share:.0%} of the median {median:,.1f} of the {len(values)} of its kind ({of_kind}), "
                 f"more than {margin:.0%} below")  # fmt: skip
        if z is None or z < -OUTSIDE_Z:
            verdict, reasons = Verdict.REVIEW_REQUIRED, [where]
        else:
            verdict = Verdict.INCONCLUSIVE
            reasons = [
                f"{where}, but within their spread (MAD {mad:,.1f}, robust z {z:.1f}): they vary too much to single it out"
            ]
    return TrialResult(name=name, node=node, gpu=gpu, verdict=verdict, reasons=reasons, evidence=evidence)


def _on_node(cfg: dict[str, Any]) -> dict[str, Any]:
    """Runs on the node: the trials, as ``seatrial hw`` runs them there."""
    from seatrial.hw import HwConfig as Config
    from seatrial.hw import run_hw

    run = run_hw(Config.model_validate(cfg), host_fleet=False)  # the fleet view judges every node's GPUs
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
    """Every chosen node's sheet and the fleet view (see the module docstring), as
    :class:`seatrial.runs.summaries.hw.HwFleetSummary` writes it (the CLI adds the verdict fields)."""
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
    nodes_out = [HwNode.model_validate(e) for e in out]
    return HwFleetSummary(nodes=nodes_out, fleet=fleet_verdicts(out, margin), margin=margin).to_json()
