"""Deployments side by side (seed 001: one node of NVFP4 against two nodes of FP8), from runs named
``NAME=PATH`` over prefill-only, decode-only and mixed workloads, and their ``seatrial capacity`` runs.

- Per phase and level, paired by level: how many times faster one deployment is, as a ratio of geometric
  means of per-start values with a Welch interval (``stats.effects.log_contrast``): prompt tokens per
  second (prefill), TPOT (decode; faster = shorter), output tokens per second.
- Two deployments differ in precision and topology at once: the split of a gap into a precision share
  and a topology share cannot be drawn from them (they are confounded), and none is given.
- Four deployments named ``PRECISION@TOPOLOGY`` that make a 2 x 2 (each precision on each topology): each
  factor's ratio averaged over the other factor's two levels, and their interaction (1 when the factors'
  effects multiply), each with its interval, per phase and level.
- Capacity: where each deployment has a capacity run at the same SLO, attainment and mode, its capacity,
  per GPU and cost per 1M output tokens beside the others'. A capacity is a lower bound: the ratio of two
  is a ratio of lower bounds, said so.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from seatrial.errors import ConfigError
from seatrial.experiment.sources import Run, workload_differences
from seatrial.experiment.values import per_start
from seatrial.stats.effects import Ratio, log_contrast

FACTORIAL = re.compile(r"^(?P<precision>[^@]+)@(?P<topology>[^@]+)$")
CONFOUNDED = (
    "two deployments that differ in precision and topology at once: their gap cannot be split into a "
    "precision share and a topology share (confounded); a 2 x 2 of deployments (each precision on each "
    "topology, named PRECISION@TOPOLOGY) separates them"
)
PHASES = {"prefill": "prompt_tok_s", "decode": "decode_speed", "mixed": "output_tok_s"}


def speeds(starts: list[dict[str, Any]], measure: str) -> list[float]:
    """Per start: prompt tokens per second, 1000 / TPOT p50 (decode speed), or output tokens per second."""
    if measure == "prompt_tok_s":
        return [st["prompt_tokens"] / st["duration_s"] for st in starts if st.get("prompt_tokens") and st.get("duration_s")]
    if measure == "decode_speed":
        return [1000.0 / v for v in per_start(starts, "tpot_ms.p50")]
    return per_start(starts, measure)


def _by_kind(runs: list[Run]) -> dict[str, list[Run]]:
    """A deployment's runs by workload kind (several runs of one kind are several starts of it)."""
    out: dict[str, list[Run]] = {}
    for r in runs:
        if r.capacity is None:
            for fields in r.workloads.values():
                out.setdefault(fields["name"], []).append(r)
    return out


def _starts(runs: list[Run], level: str) -> list[dict[str, Any]]:
    return [st for r in runs for (_, lv), starts in r.levels.items() if lv == level for st in starts]


def _cell(r: Ratio) -> dict[str, Any]:
    return {"ratio": r.ratio, "ci": list(r.ci), "starts": list(r.n)}


def shared_levels(named: dict[str, list[Run]]) -> list[tuple[str, str, list[list[dict[str, Any]]]]]:
    """(workload kind, level, per deployment its starts there) for every kind and level all deployments
    measured alike; ConfigError when a kind was run differently."""
    kinds = [_by_kind(runs) for runs in named.values()]
    out = []
    for kind in sorted(set.intersection(*(set(k) for k in kinds))):
        groups = [k[kind] for k in kinds]
        fields = [next(f for f in r.workloads.values() if f["name"] == kind) for g in groups for r in g]
        for a, b in pairwise(fields):
            if diffs := workload_differences(a, b):
                raise ConfigError(f"the runs of {kind!r} were run differently ({'; '.join(diffs)}): not compared")
        levels = set.intersection(*({lv for r in g for (_, lv) in r.levels} for g in groups))
        for level in sorted(levels, key=lambda lv: float(lv.removeprefix("C=").removesuffix("/s"))):
            out.append((kind, level, [_starts(g, level) for g in groups]))
    return out


def pair_phases(named: dict[str, list[Run]]) -> list[dict[str, Any]]:
    """Two deployments: per kind and level, A's speed over B's in each measure, with intervals."""
    rows = []
    for kind, level, (a, b) in shared_levels(named):
        row: dict[str, Any] = {"workload": kind, "level": level}
        for measure in ("prompt_tok_s", "decode_speed", "output_tok_s"):
            row[measure] = _cell(log_contrast([speeds(a, measure), speeds(b, measure)], (1, -1)))
        rows.append(row)
    return rows


def factorial(named: dict[str, list[Run]]) -> tuple[list[str], list[str]] | None:
    """The two precisions and two topologies of four deployments named PRECISION@TOPOLOGY that cross; None
    when the names are not such a 2 x 2."""
    parts = [FACTORIAL.match(n) for n in named]
    if len(named) != 4 or not all(parts):
        return None
    pairs = [(m["precision"], m["topology"]) for m in parts if m]
    precisions, topologies = list(dict.fromkeys(p for p, _ in pairs)), list(dict.fromkeys(t for _, t in pairs))
    if len(precisions) != 2 or len(topologies) != 2 or len(set(pairs)) != 4:
        return None
    return precisions, topologies


def factor_shares(named: dict[str, list[Run]], precisions: list[str], topologies: list[str]) -> list[dict[str, Any]]:
    """Per kind and level, the precision factor, the topology factor and their interaction with intervals."""
    order = [f"{p}@{t}" for t in topologies for p in precisions]  # (P1,T1) (P2,T1) (P1,T2) (P2,T2)
    ordered = {n: named[n] for n in order}
    weights = {"precision": (0.5, -0.5, 0.5, -0.5), "topology": (0.5, 0.5, -0.5, -0.5), "interaction": (1, -1, -1, 1)}
    rows = []
    for kind, level, starts in shared_levels(ordered):
        measure = PHASES.get(kind, "output_tok_s")
        groups = [speeds(s, measure) for s in starts]
        for factor, w in weights.items():
            rows.append({"workload": kind, "level": level, "measure": measure, "factor": factor,
                         **_cell(log_contrast(groups, w))})  # fmt: skip
    return rows


def capacities(named: dict[str, list[Run]]) -> dict[str, Any]:
    """Each deployment's capacity at the SLO (from its capacity run), and whether they can stand together."""
    rows: list[dict[str, Any]] = []
    for name, runs in named.items():
        cap = next((r.capacity for r in runs if r.capacity is not None), None)
        if cap is not None:
            c = cap.capacity
            rows.append({"deployment": name, "mode": c.mode, "slo": c.slo, "attainment": c.attainment_target,
                         "capacity": c.rate_req_s if c.mode == "rate" else c.concurrency, "found": c.found,
                         "per_gpu": cap.per_gpu and cap.per_gpu.to_json(), "cost": cap.cost and cap.cost.to_json()})  # fmt: skip
    terms = {(r["mode"], tuple(sorted(r["slo"].items())), r["attainment"]) for r in rows}
    comparable = len(rows) == len(named) and len(terms) == 1
    why = None if comparable else (
        "not every deployment has a capacity run" if len(rows) != len(named)
        else "the capacity runs differ in SLO, attainment or mode"
    )  # fmt: skip
    return {"rows": rows, "comparable": comparable, "reason": why,
            "note": "a capacity is a lower bound: a ratio of two is a ratio of lower bounds"}  # fmt: skip


def deployment_comparison(named: dict[str, list[Run]]) -> dict[str, Any]:
    """The deployments' phases (two), or factors (a 2 x 2), and capacities (see the module docstring)."""
    names = list(named)
    design = factorial(named)
    if len(names) == 2:
        return {"names": names, "design": "pair", "phases": pair_phases(named), "split": None,
                "confounded": CONFOUNDED, "capacity": capacities(named)}  # fmt: skip
    if design is None:
        raise ConfigError(
            "deployments: give two names, or four named PRECISION@TOPOLOGY that make a 2 x 2 (each precision on "
            f"each topology); got {', '.join(names)}"
        )
    precisions, topologies = design
    return {"names": names, "design": "2x2", "precisions": precisions, "topologies": topologies, "phases": [],
            "split": factor_shares(named, precisions, topologies), "confounded": None,
            "capacity": capacities(named)}  # fmt: skip
