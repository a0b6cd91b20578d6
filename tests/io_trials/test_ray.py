"""seatrial io over a real two-node Ray cluster on loopback (tests/ray_cluster.py): every alive node is a node
(fio and iperf3 run on it through its actor, scratch removed); net.nccl without GPUs is UNAVAILABLE with the
reason, and with gloo the same code path runs one rank per node, checks every result and reports nccl-tests' bus
bandwidth; the verdict against a stated floor, and a wrong result FAILs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.clirun import invoke
from tests.io_trials.conftest import SMALL, need
from tests.ray_cluster import RayCluster

from seatrial.fleet.nodes import Ssh
from seatrial.io.context import IoContext
from seatrial.io.models import IoConfig, parse_expect
from seatrial.io.nccl import SINGLE_NODE, judge_rows, nccl_trial, rank_nodes
from seatrial.io.nodes import parse_node
from seatrial.runs.verdicts import Verdict


def _node(node_id: str, gpus: int) -> dict[str, Any]:
    return {"NodeID": node_id, "NodeManagerAddress": f"198.18.0.{len(node_id)}", "Resources": {"GPU": gpus}}


def test_ranks_are_one_per_gpu_on_every_node_or_one_per_node_with_gloo() -> None:
    a, b, c = _node("a", 8), _node("bb", 8), _node("ccc", 0)
    ranks, why = rank_nodes([a, b, c], "nccl")
    assert why is None and len(ranks) == 16 and ranks.count(a) == 8 and c not in ranks
    assert rank_nodes([a, c], "nccl") == ([], SINGLE_NODE)  # one node with GPUs: hw's collectives
    ranks, why = rank_nodes([c, _node("dddd", 0)], "nccl")
    assert ranks == [] and why is not None and "no GPU on any of the cluster's 2 alive nodes" in why
    assert rank_nodes([a, c], "gloo") == ([a, c], None)


def test_without_ray_it_says_what_it_needs() -> None:
    ssh = Ssh()
    two = [parse_node("root@198.18.0.2", ssh), parse_node("root@198.18.0.3", ssh)]
    (row,) = nccl_trial(IoContext(IoConfig(trials=["net.nccl"])), two)
    assert row.verdict is Verdict.UNAVAILABLE and "give --ray ADDRESS" in (row.reason or "")
    (row,) = nccl_trial(IoContext(IoConfig(trials=["net.nccl"])), two[:1])
    assert row.verdict is Verdict.UNAVAILABLE and row.reason == SINGLE_NODE


def test_over_a_ray_cluster_nccl_needs_gpus_and_gloo_runs_the_same_path(ray_cluster: RayCluster, tmp_path: Path) -> None:
    base = ["io", "--ray", ray_cluster.address, "--trials", "net.nccl"]
    none = invoke([*base, "--json", str(tmp_path / "nccl.json")])
    assert none.code == 8, none.output  # nothing measured
    (row,) = json.loads((tmp_path / "nccl.json").read_text())["results"]
    assert row["verdict"] == "UNAVAILABLE" and "no GPU on any of the cluster's 2 alive nodes" in row["reason"]

    # two CPU ranks on a busy 2-core host spread 27% between repeats once: this checks the path, not the host
    done = invoke([*base, "--nccl-backend", "gloo", "--nccl-max-mib", "2", "--repeats", "2", "--max-cv", "10",
                   "--json", str(tmp_path / "gloo.json"), "--out", str(tmp_path / "run")])  # fmt: skip
    assert done.code == 0, done.output
    (row,) = json.loads((tmp_path / "gloo.json").read_text())["results"]
    f = row["figures"]
    assert row["verdict"] == "PASS" and "no floor stated" in row["reason"], row
    assert (f["backend"], f["ranks"], f["nodes"], f["largest_bytes"]) == ("gloo", 2, 2, 2 << 20)
    assert [(s["op"], s["size_bytes"]) for s in f["sizes"]] == [
        ("all_reduce", 1 << 20), ("all_reduce", 2 << 20), ("all_gather", 1 << 20), ("all_gather", 2 << 20)]
    assert all(s["correct"] for s in f["sizes"]) and len(row["runs"]) == 2
    for s in f["sizes"]:  # nccl-tests' bus factor at 2 ranks: 2(n-1)/n = 1 for all-reduce, (n-1)/n = 1/2 all-gather
        factor = 1.0 if s["op"] == "all_reduce" else 0.5
        assert s["busbw_gbps"] > 0 and abs(s["busbw_gbps"] - factor * s["algbw_gbps"]) <= 0.01 * s["busbw_gbps"]
    assert "net.nccl" in (tmp_path / "run" / "report.html").read_text()

    # the same rows against a floor they cannot reach, and with one wrong result
    ranks = [{"NodeID": str(k), "NodeManagerAddress": "127.0.0.1"} for k in range(2)]
    rows = [{"op": s["op"], "size_bytes": s["size_bytes"], "busbw_gbps": r["allreduce_busbw_gbps"],
             "algbw_gbps": r["allreduce_busbw_gbps"], "time_us": r["time_us"], "correct": True, "repeat": r["repeat"]}
            for r in row["runs"] for s in f["sizes"]]  # fmt: skip
    high = IoContext(IoConfig(trials=["net.nccl"], expect=parse_expect(["net.nccl.busbw_gbps=1000000"])))
    failed = judge_rows(high, "ray", ranks, rows)
    assert failed.verdict is Verdict.FAIL and "below the floor 800000 GB/s" in (failed.reason or "")
    rows[-1]["correct"] = False
    wrong = judge_rows(IoContext(IoConfig(trials=["net.nccl"])), "ray", ranks, rows)
    assert wrong.verdict is Verdict.FAIL and "wrong results across 2 ranks: all_gather at 2 MiB" in (wrong.reason or "")


def test_every_ray_node_is_a_node_and_runs_the_trials_there(ray_cluster: RayCluster, tmp_path: Path) -> None:
    need("fio", "iperf3")
    work = tmp_path / "work"
    done = invoke(["io", "--ray", ray_cluster.address, "--trials", "storage.read,net.tcp", "--path", str(work),
                   "--repeats", "1", *SMALL, "--net-seconds", "1", "--net-streams", "1", "--expect", "net.gbps=0.001",
                   "--json", str(tmp_path / "io.json")])  # fmt: skip
    doc = json.loads((tmp_path / "io.json").read_text())
    specs = doc["nodes"]
    assert len(specs) == 2 and all(s.endswith("@127.0.0.1") for s in specs) and specs[0] != specs[1], done.output
    reads = [r for r in doc["results"] if r["trial"] == "storage.read"]
    assert sorted(r["node"] for r in reads) == sorted(specs)
    assert all(r["verdict"] == "PASS" and r["figures"]["seq_read_gbps"] > 0 for r in reads), reads
    (pair,) = [r for r in doc["results"] if r["trial"] == "net.tcp"]
    assert pair["verdict"] == "PASS" and pair["node"] == f"{specs[0]} <-> {specs[1]}", pair
    assert pair["figures"]["forward_gbps"] > 0 and pair["figures"]["reverse_gbps"] > 0
    assert done.code == 0, done.output
    assert list(work.iterdir()) == []  # each node's scratch folder removed
    both = invoke(["io", "local", "--ray", ray_cluster.address])
    assert both.code == 2 and "not both" in both.output
