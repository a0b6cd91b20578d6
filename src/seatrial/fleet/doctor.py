"""``seatrial doctor NODE...``: prove every node runs the same contract (seed 000: the same image, the same
runtime patches, the same checkpoint on both ranks). Each node's fingerprint comes from the probe (over
SSH, or here); the items are compared across nodes: PASS when every node has the same value, FAIL
naming who differs, UNAVAILABLE where a node could not read the item (no NVIDIA driver, no docker)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from seatrial.errors import ConfigError
from seatrial.fleet.nodes import Place, Ssh, run_probe
from seatrial.runs.redact import SECRET_WORDS
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import judge_run
from seatrial.verdict import Verdict

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
    return Node(spec, Place(host, path or model_dir or ""))


def probe_args(node: Node, files: list[str], image: str | None, prefixes: list[str]) -> dict[str, Any]:
    return {"action": "fingerprint", "packages": list(PACKAGES), "files": files, "image": image,
            "model_dir": node.place.path or None, "env_prefixes": prefixes,
            "secret_words": [*SECRET_WORDS, "token", "pass"]}  # fmt: skip


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
    out |= {f"env.{k}": v for k, v in (fp.get("env") or {}).items()}
    return out


def _model_digest(model: dict[str, Any]) -> str:
    key = json.dumps(model.get("key") or {}, sort_keys=True).encode()
    return f"{hashlib.sha256(key).hexdigest()[:16]} ({model.get('files')} files, total_size {model.get('total_size')})"


def judge_item(name: str, values: dict[str, Any]) -> TrialResult:
    """PASS when every node has the same value; FAIL naming the nodes that differ; UNAVAILABLE with the
    reasons where a node could not read it."""
    unread = {n: why for n, v in values.items() if (why := _unavailable(v)) is not None}
    evidence = {"values": values}
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
) -> dict[str, Any]:
    """The fingerprints of every node (at once) and the item-by-item comparison. ``probe`` runs the probe
    on a node (default: over SSH, or here for ``local``); ServerError (exit 4) when a node cannot be reached."""
    if len(nodes) < 2:
        raise ConfigError("doctor compares two or more nodes")
    parsed = [parse_node(n, model_dir) for n in nodes]
    prefixes = env_prefixes or list(DEFAULT_PREFIXES)
    run = probe or (lambda node, args: run_probe(node.place, args, ssh or Ssh(), python, timeout_s=300))
    with ThreadPoolExecutor(max_workers=len(parsed)) as pool:
        prints = list(pool.map(lambda n: run(n, probe_args(n, files or [], image, prefixes)), parsed))
    return summarize({n.name: fp for n, fp in zip(parsed, prints, strict=True)})


def summarize(fingerprints: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The item-by-item comparison of the nodes' fingerprints."""
    results = compare_nodes(fingerprints)
    judged = judge_run(results)
    return {
        "nodes": list(fingerprints),
        "items": [r.to_json() for r in results],
        "differences": [reason for r in results if r.verdict is Verdict.FAIL for reason in r.reasons],
        "passed": not any(r.verdict is Verdict.FAIL for r in results),
        "counts": judged["counts"],
        "not_measured": judged["not_measured"],
        "fingerprints": fingerprints,
    }


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
) -> dict[str, Any]:
    """The probe on every alive node of a Ray cluster (a task pinned to each), compared like SSH nodes."""
    from seatrial.errors import ServerError
    from seatrial.raycluster import alive_nodes, on_each_node

    alive = alive_nodes(address)
    if len(alive) < 2:
        raise ConfigError(f"--ray {address}: {len(alive)} alive node; doctor compares two or more")

    def args_of(n: dict[str, Any]) -> tuple[Any, ...]:
        node = Node(n["NodeID"], Place(None, model_dir or ""))
        return probe_args(node, files or [], image, env_prefixes or list(DEFAULT_PREFIXES)), python

    prints = {}
    for n, got, why in on_each_node(alive, _probe_here, args_of, 600):
        if got is None:
            raise ServerError(
                f"Ray node {n['NodeID'][:12]} ({n['NodeManagerAddress']}) did not answer: {why}"
            )
        prints[f"{got['hostname']} {n['NodeManagerAddress']} {n['NodeID'][:8]}"] = got["fingerprint"]
    return summarize(prints)
