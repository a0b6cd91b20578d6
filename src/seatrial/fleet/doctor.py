"""``seatrial doctor NODE...``: prove every node runs the same contract (seed 000: the same image, the same
runtime patches, the same checkpoint on both ranks). Each node's fingerprint comes from the probe (over
SSH, or here); the items are compared across nodes: PASS when every node has the same value, FAIL
naming who differs, UNAVAILABLE where a node could not read the item (no NVIDIA driver, no docker).

The checkpoint is read from the node's files every time (its key manifest); where sync left a manifest
there, the files are also compared with it and each file changed since the sync is named. Environment
variables are compared by SHA-256 and shown only where nothing about them looks secret
(:func:`seatrial.runs.redact.env_digests`). A node that cannot be reached fails alone: the others are
compared and the summary names it (exit 4)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from seatrial.errors import ConfigError, ServerError
from seatrial.fleet.nodes import Place, Ssh, check_host, run_probe
from seatrial.fleet.verify import differences, printable
from seatrial.runs.redact import env_digests
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.fleet import DoctorSummary
from seatrial.runs.verdicts import Verdict, judge_run

DEFAULT_PREFIXES = ("NCCL_", "VLLM_", "CUDA_", "GLOO_", "TORCH_", "UCX_")
PACKAGES = ("vllm", "torch", "transformers", "flashinfer-python", "nvidia-nccl-cu12", "nvidia-nccl-cu13")


@dataclass(frozen=True)
class Node:
    name: str
    place: Place  # host and the node's own checkpoint folder ("" when none)


def parse_node(spec: str, model_dir: str | None) -> Node:
    """``local``, ``[user@]host``, or either with ``:MODEL_DIR``."""
    if spec == "local" or spec.startswith("local:"):
        return Node(spec, Place(None, spec.partition(":")[2] or model_dir or ""))
    host, _, path = spec.partition(":")
    if not host:
        raise ConfigError(f"{spec!r}: expected local, [user@]host or either with :MODEL_DIR")
    check_host(host)
    return Node(spec, Place(host, path or model_dir or ""))


def probe_args(node: Node, files: list[str], image: str | None, prefixes: list[str]) -> dict[str, Any]:
    return {"action": "fingerprint", "packages": list(PACKAGES), "files": files, "image": image,
            "model_dir": node.place.path or None, "env_prefixes": prefixes}  # fmt: skip


def _unavailable(value: Any) -> str | None:
    return str(value["unavailable"]) if isinstance(value, dict) and set(value) == {"unavailable"} else None


def items(fp: dict[str, Any]) -> dict[str, Any]:
    """One node's fingerprint as flat items (``packages.torch``, ``env.NCCL_IB_HCA``...)."""
    out: dict[str, Any] = {k: fp.get(k) for k in ("os", "kernel", "python")}
    out |= {f"packages.{k}": v for k, v in (fp.get("packages") or {}).items()}
    nv = fp.get("nvidia") or {}
    if _unavailable(nv):
        out["nvidia.driver"] = out["nvidia.cuda"] = nv
    else:
        out["nvidia.driver"], out["nvidia.cuda"] = nv.get("driver"), nv.get("cuda")
    if "image" in fp:
        img = fp["image"]
        out["image"] = (
            img if _unavailable(img) else {"id": img.get("id"), "repo_digests": img.get("repo_digests")}
        )
    out |= {
        f"files.{p}": ("missing" if _unavailable(v) == "no such file" else v)
        for p, v in (fp.get("files") or {}).items()
    }
    model = fp.get("model")
    if model is not None:
        out["model.manifest"] = model if _unavailable(model) else _model_digest(model)
        out["model.files"] = model if _unavailable(model) else model.get("key")
        if not _unavailable(model):
            out["model.since_sync"] = model.get("since_sync")
    out |= {f"env.{k}": v for k, v in (fp.get("env") or {}).items()}
    return out


def since_sync(model: dict[str, Any]) -> Any:
    """What changed in the node's checkpoint since sync verified it: a list of sentences naming each file
    (empty: nothing), "no sync manifest", or ``{"error"}`` when the manifest sync left cannot be read."""
    synced = model.pop("synced", None)
    now = model.pop("manifest", None)
    if synced is None:
        return "no sync manifest"
    if "error" in synced or now is None:
        return {"error": synced.get("error", "no manifest of the files")}
    return [f"{d} (changed since sync)" for d in differences(synced, now)]


def _prepared(fp: dict[str, Any]) -> dict[str, Any]:
    """A node's fingerprint as it is kept and written: the environment by digest, the checkpoint's state
    against its sync manifest (the bulky manifests themselves dropped)."""
    fp = {**fp, "env": env_digests(fp.get("env") or {})}
    model = fp.get("model")
    if isinstance(model, dict) and not _unavailable(model):
        model = dict(model)
        model["since_sync"] = since_sync(model)
        fp["model"] = model
    return fp


def _model_digest(model: dict[str, Any]) -> str:
    key = json.dumps(model.get("key") or {}, sort_keys=True).encode()
    return f"{hashlib.sha256(key).hexdigest()[:16]} ({model.get('files')} files, total_size {model.get('total_size')})"


def judge_item(name: str, values: dict[str, Any]) -> TrialResult:
    """PASS when every node has the same value; FAIL naming the nodes that differ; UNAVAILABLE with the
    reasons where a node could not read it."""
    unread = {n: why for n, v in values.items() if (why := _unavailable(v)) is not None}
    evidence = {"values": values}
    if name == "model.since_sync":
        return _judge_since_sync(values)
    if unread:
        reasons = [f"{n}: {why}" for n, why in unread.items()]
        return TrialResult(name=name, verdict=Verdict.UNAVAILABLE, reasons=reasons, evidence=evidence)
    shown = {n: json.dumps(v, sort_keys=True) for n, v in values.items()}
    if len(set(shown.values())) == 1:
        return TrialResult(name=name, verdict=Verdict.PASS, evidence=evidence)
    if name == "model.files":
        return TrialResult(
            name=name, verdict=Verdict.FAIL, reasons=_file_differences(values), evidence=evidence
        )
    words = [f"{n}: {_short(v)}" for n, v in values.items()]
    return TrialResult(
        name=name, verdict=Verdict.FAIL, reasons=[f"{name} differs: {'; '.join(words)}"], evidence=evidence
    )


def _judge_since_sync(values: dict[str, Any]) -> TrialResult:
    """FAIL when a node's files changed since sync verified them, or its sync manifest cannot be read;
    a node without one is not judged by it (its files are still compared with the other nodes')."""
    reasons = []
    for node, v in values.items():
        if isinstance(v, dict):
            reasons.append(f"{node}: sync manifest unusable: {v.get('error')}")
        elif isinstance(v, list):
            reasons += [f"{node}: {d}" for d in v]
    verdict = Verdict.FAIL if reasons else Verdict.PASS
    return TrialResult(name="model.since_sync", verdict=verdict, reasons=reasons, evidence={"values": values})


def _file_differences(values: dict[str, Any]) -> list[str]:
    """Which checkpoint files differ between the nodes (by their key hashes)."""
    nodes = list(values)
    ref = values[nodes[0]] or {}
    out = []
    for n in nodes[1:]:
        other = values[n] or {}
        for rel in sorted(ref.keys() | other.keys()):
            if ref.get(rel) != other.get(rel):
                what = (
                    "missing" if rel not in other else ("not on " + nodes[0] if rel not in ref else "differs")
                )
                out.append(f"model file {rel}: {what} on {n}")
    return out


def _short(v: Any) -> str:
    if isinstance(v, dict) and "sha256" in v:  # an environment variable (runs.redact.env_digests)
        return v.get("value", f"sha256 {v['sha256'][:12]} ({v.get('hidden')})")
    text = v if isinstance(v, str) else json.dumps(v)
    return "unset" if v is None else (text if len(text) <= 80 else text[:77] + "...")


def compare_nodes(fingerprints: dict[str, dict[str, Any]]) -> list[TrialResult]:
    flat = {n: items(fp) for n, fp in fingerprints.items()}
    names = sorted({k for f in flat.values() for k in f}, key=lambda k: (k.split(".")[0] != "os", k))
    return [judge_item(k, {n: f.get(k) for n, f in flat.items()}) for k in names]


def doctor(
    nodes: list[str],
    *,
    model_dir: str | None = None,
    files: list[str] | None = None,
    image: str | None = None,
    env_prefixes: list[str] | None = None,
    ssh: Ssh | None = None,
    python: str = "python3",
    probe: Callable[[Node, dict[str, Any]], Any] | None = None,
) -> DoctorSummary:
    """The fingerprints of every node (at once) and the item-by-item comparison. ``probe`` runs the probe
    on a node (default: over SSH, or here for ``local``); ServerError (exit 4) when a node cannot be reached."""
    if len(nodes) < 2:
        raise ConfigError("doctor compares two or more nodes")
    parsed = [parse_node(n, model_dir) for n in nodes]
    prefixes = env_prefixes or list(DEFAULT_PREFIXES)
    run = probe or (lambda node, args: run_probe(node.place, args, ssh or Ssh(), python, timeout_s=300))

    def one(node: Node) -> tuple[str, Any]:
        try:
            return node.name, run(node, probe_args(node, files or [], image, prefixes))
        except ServerError as exc:  # this node fails alone: the others are still compared
            return node.name, {"unreachable": str(exc)}

    with ThreadPoolExecutor(max_workers=len(parsed)) as pool:
        return summarize(dict(pool.map(one, parsed)))


def summarize(fingerprints: dict[str, dict[str, Any]]) -> DoctorSummary:
    """The item-by-item comparison of the nodes' fingerprints; a node whose value is ``{"unreachable":
    why}`` is named in ``unreachable`` and left out of the comparison."""
    down = {n: fp["unreachable"] for n, fp in fingerprints.items() if set(fp) == {"unreachable"}}
    prints = {n: _prepared(printable(fp)) for n, fp in fingerprints.items() if n not in down}
    results = compare_nodes(prints) if prints else []
    judged = judge_run(results)
    return DoctorSummary(
        nodes=list(fingerprints),
        unreachable=down,
        items=[r.to_json() for r in results],
        differences=[reason for r in results if r.verdict is Verdict.FAIL for reason in r.reasons],
        passed=not down and not any(r.verdict is Verdict.FAIL for r in results),
        counts=judged["counts"],
        not_measured=judged["not_measured"],
        fingerprints=prints,
    )


def _probe_here(args: dict[str, Any], python: str) -> dict[str, Any]:
    """On a Ray node: the probe run there, as for ``local``, and where that was."""
    import socket

    return {"fingerprint": run_probe(Place(None, args.get("model_dir") or ""), args, Ssh(), python, 300),
            "hostname": socket.gethostname()}  # fmt: skip


def doctor_ray(
    address: str,
    *,
    model_dir: str | None = None,
    files: list[str] | None = None,
    image: str | None = None,
    env_prefixes: list[str] | None = None,
    python: str = "python3",
    timeout_s: float = 600,
) -> DoctorSummary:
    """The probe on every alive node of a Ray cluster (a task pinned to each, all under one deadline),
    compared like SSH nodes; a node that does not answer is named in ``unreachable``."""
    from seatrial.raycluster import alive_nodes, on_each_node

    alive = alive_nodes(address)
    if len(alive) < 2:
        raise ConfigError(f"--ray {address}: {len(alive)} alive node; doctor compares two or more")

    def args_of(n: dict[str, Any]) -> tuple[Any, ...]:
        node = Node(n["NodeID"], Place(None, model_dir or ""))
        return probe_args(node, files or [], image, env_prefixes or list(DEFAULT_PREFIXES)), python

    prints: dict[str, dict[str, Any]] = {}
    for n, got, why in on_each_node(alive, _probe_here, args_of, timeout_s):
        if got is None:  # this node fails alone: the others are still compared
            name = f"{n.get('NodeManagerHostname') or '?'} {n['NodeManagerAddress']} {n['NodeID'][:8]}"
            prints[name] = {"unreachable": f"Ray node {n['NodeID'][:12]} did not answer: {why}"}
        else:
            prints[f"{got['hostname']} {n['NodeManagerAddress']} {n['NodeID'][:8]}"] = got["fingerprint"]
    return summarize(prints)
