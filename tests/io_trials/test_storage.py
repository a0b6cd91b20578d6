"""storage.* and kv.disk through the CLI on this machine's disk with the real fio: the summary's contract, the
scratch folder gone afterwards, the checkpoint untouched, and the bad inputs (no fio, read-only path,
unreachable node, Ctrl-C)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.clirun import ctrl_c_reaches, invoke
from tests.fleet.conftest import write_checkpoint
from tests.io_trials.conftest import SMALL, need

from seatrial.server.process import free_port


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _rows(doc: dict, trial: str) -> list[dict]:
    return [r for r in doc["results"] if r["trial"] == trial]


def test_storage_and_kv_disk_measure_and_clean_up(tmp_path: Path) -> None:
    need("fio")
    ckpt = write_checkpoint(tmp_path / "ckpt", shards=2, rows=4096)
    before = _digest(ckpt)
    work = tmp_path / "work"
    res = invoke(["io", "--trials", "storage,kv.disk", "--path", str(work), "--checkpoint", str(ckpt), "--repeats", "2",
                  "--max-cv", "10", *SMALL, "--json", str(tmp_path / "io.json"), "--out", str(tmp_path / "run")])  # fmt: skip
    doc = json.loads((tmp_path / "io.json").read_text())
    assert res.code == 0, res.output
    for trial in ("storage.read", "storage.write", "storage.load", "kv.disk"):
        (row,) = _rows(doc, trial)
        assert (
            set(row) == {"node", "trial", "verdict", "reason", "figures", "runs"} and row["node"] == "local"
        )
        assert row["verdict"] == "PASS" and len(row["runs"]) == 2, row
    assert _rows(doc, "storage.read")[0]["figures"]["seq_read_gbps"] > 0
    load = _rows(doc, "storage.load")[0]["figures"]
    assert load["shards"] == 2 and load["checkpoint_bytes"] == sum(
        p.stat().st_size for p in ckpt.glob("*.safetensors")
    )
    assert load["predicted_load_s"] == pytest.approx(
        load["checkpoint_bytes"] / load["load_gbps"] / 1e9, rel=0.01
    )
    kv = _rows(doc, "kv.disk")[0]["figures"]
    assert [lv["concurrency"] for lv in kv["levels"]] == [1, 4] and kv["chunk_bytes"] == 1 << 20
    assert all(lv["read_p95_ms"] < 200 and lv["write_p95_ms"] < 500 for lv in kv["levels"])
    assert list(work.iterdir()) == [] and _digest(ckpt) == before  # scratch removed, checkpoint untouched
    assert "seatrial io" in (tmp_path / "run" / "report.html").read_text()
    # the same disk against a floor it cannot reach: FAIL naming the floor
    res = invoke(["io", "--trials", "storage.read", "--path", str(work), "--repeats", "1", *SMALL, "--expect",
                  "storage.read.gbps=100000", "--json", str(tmp_path / "floor.json")])  # fmt: skip
    (row,) = json.loads((tmp_path / "floor.json").read_text())["results"]
    assert res.code == 1 and row["verdict"] == "FAIL" and "below the floor 100000" in row["reason"]


def test_no_fio_is_unavailable_naming_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "mktemp", "mkdir", "rm", "stat", "find", "cat", "tr", "sleep"):
        found = subprocess.run(
            ["sh", "-c", f"command -v {tool}"], capture_output=True, text=True
        ).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    res = invoke(
        [
            "io",
            "--trials",
            "storage.read,kv.disk",
            "--path",
            str(tmp_path / "w"),
            "--json",
            str(tmp_path / "j.json"),
        ]
    )
    rows = json.loads((tmp_path / "j.json").read_text())["results"]
    assert res.code == 8 and {r["verdict"] for r in rows} == {"UNAVAILABLE"}
    assert all("apt-get install fio" in r["reason"] for r in rows)


def test_read_only_path_is_bad_input(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "seatrial-io-test", str(ro)]
            ).returncode
            == 0
        )
    else:
        ro.chmod(0o555)
    try:
        res = invoke(["io", "--trials", "storage.read", "--path", str(ro)])
    finally:
        if mounted:
            subprocess.run(["umount", str(ro)], check=True)
    assert res.code == 2 and "cannot write a scratch folder under" in res.output


def test_unreachable_node_fails_alone(tmp_path: Path) -> None:
    need("fio")
    res = invoke(["io", "local", "root@127.0.0.1", "--ssh-port", str(free_port()), "--trials", "storage.read",
                  "--path", str(tmp_path / "w"), "--repeats", "1", *SMALL, "--json", str(tmp_path / "j.json")])  # fmt: skip
    doc = json.loads((tmp_path / "j.json").read_text())
    assert res.code == 4, res.output
    assert (
        "root@127.0.0.1" in doc["unreachable"]
        and "cannot be reached over SSH" in doc["unreachable"]["root@127.0.0.1"]
    )
    by_node = {r["node"]: r["verdict"] for r in doc["results"]}
    assert by_node == {"root@127.0.0.1": "UNAVAILABLE", "local": "PASS"}


def _fio_under(path: Path) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if cmd.startswith("fio") and str(path) in cmd:
                    out.append(int(d))
    return out


def test_ctrl_c_stops_fio_and_removes_scratch(tmp_path: Path) -> None:
    need("fio")
    work = tmp_path / "w"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "seatrial.cli.app", "io", "--trials", "storage.read", "--path", str(work),
                             "--runtime", "60", "--size-mib", "8", "--jobs", "1"], env=env, preexec_fn=ctrl_c_reaches,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.monotonic() + 30
    while not _fio_under(work) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _fio_under(work), "fio never started"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out.decode()
    assert _fio_under(work) == [] and list(work.iterdir()) == []
