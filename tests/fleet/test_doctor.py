"""``seatrial doctor`` on two nodes, ``local:/a`` and ``root@127.0.0.1:/b`` through a real sshd on
loopback. The SSH node runs in a mount namespace of its own (``unshare -m``), so a file at one path can
differ between the two "nodes" of this one machine, as a runtime patch does between two hosts."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.fleet.conftest import write_checkpoint
from tests.fleet.sshd import Sshd, start_sshd

from seatrial.fleet.doctor import DEFAULT_PREFIXES


@pytest.fixture(scope="module")
def node_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    root = tmp_path_factory.mktemp("doctor")
    patch = root / "patches" / "fix_attention.py"
    patch.parent.mkdir()
    patch.write_text("PATCH = 1\n")
    override = root / "b-override.py"
    script = root / "node-b.sh"
    script.write_text(
        "#!/bin/sh\n# node b: its own file at the patch's path when an override is there\n"
        f"exec unshare -m sh -c 'if [ -f {override} ]; then mount --bind {override} {patch}; fi; "
        'exec sh -c "$SSH_ORIGINAL_COMMAND"\'\n'
    )
    script.chmod(0o755)
    server = start_sshd(root / "sshd", force_command=str(script))
    yield server, patch
    server.stop()


@pytest.fixture
def nodes(node_b: tuple[Sshd, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    for name in list(os.environ):
        if name.startswith(DEFAULT_PREFIXES):
            monkeypatch.delenv(name)  # the SSH node's fresh session has none: start both equal
    a = write_checkpoint(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    override = node_b[1].parent.parent / "b-override.py"
    override.unlink(missing_ok=True)
    return a, b


def doctor(sshd: Sshd, a: Path, b: Path, tmp: Path, *extra: str) -> tuple[int, dict, str]:
    result = invoke(
        ["doctor", f"local:{a}", f"{sshd.target}:{b}", *extra, *sshd.flags(), "--json", str(tmp / "d.json")]
    )
    doc = json.loads((tmp / "d.json").read_text()) if (tmp / "d.json").exists() else {}
    return result.code, doc, result.output


def failed(doc: dict) -> dict[str, list[str]]:
    return {i["name"]: i["reasons"] for i in doc["items"] if i["verdict"] == "FAIL"}


def test_identical_nodes_pass(node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path) -> None:
    sshd, patch = node_b
    code, doc, out = doctor(sshd, *nodes, tmp_path, "--files", str(patch), "--out", str(tmp_path / "run"))
    assert code == 0 and doc["passed"], out
    names = {i["name"]: i["verdict"] for i in doc["items"]}
    assert names["os"] == names["kernel"] == names["python"] == names[f"files.{patch}"] == "PASS"
    assert names["model.manifest"] == names["model.files"] == "PASS"
    assert names["nvidia.driver"] in ("PASS", "UNAVAILABLE")  # no GPU here: UNAVAILABLE, never a failure
    assert "Doctor" in (tmp_path / "run" / "report.html").read_text()


def test_one_changed_config_byte_fails_naming_it(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    sshd, _ = node_b
    a, b = nodes
    (b / "config.json").write_text((b / "config.json").read_text().replace("512", "513"))
    code, doc, _ = doctor(sshd, a, b, tmp_path)
    assert code == 1 and list(failed(doc)) == ["model.files", "model.manifest"]
    assert failed(doc)["model.files"] == [f"model file config.json: differs on {sshd.target}:{b}"]


def test_a_differing_patch_file_fails_naming_it(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    sshd, patch = node_b
    (patch.parent.parent / "b-override.py").write_text("PATCH = 2\n")
    code, doc, _ = doctor(sshd, *nodes, tmp_path, "--files", str(patch))
    assert code == 1 and list(failed(doc)) == [f"files.{patch}"]


def test_a_differing_nccl_variable_fails_naming_it(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sshd, _ = node_b
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "lo")
    monkeypatch.setenv("NCCL_IB_TOKEN", "do-not-leak")  # named like a secret: compared by SHA-256 only
    code, doc, out = doctor(sshd, *nodes, tmp_path)
    assert code == 1 and list(failed(doc)) == ["env.NCCL_IB_TOKEN", "env.NCCL_SOCKET_IFNAME"]
    assert (
        "lo" in failed(doc)["env.NCCL_SOCKET_IFNAME"][0]
        and "unset" in failed(doc)["env.NCCL_SOCKET_IFNAME"][0]
    )
    assert "do-not-leak" not in (tmp_path / "d.json").read_text() and "do-not-leak" not in out


def test_an_unreachable_node_is_exit_4(nodes: tuple[Path, Path], node_b: tuple[Sshd, Path]) -> None:
    a, b = nodes
    result = invoke(["doctor", f"local:{a}", f"root@127.0.0.2:{b}", *node_b[0].flags()])
    assert result.code == 4 and "cannot be reached" in result.output


def test_doctor_reads_the_files_not_the_note_sync_left(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 21 item 1: after a sync, a changed config, a deleted tokenizer and a deleted shard on a node
    are found from its files, and named as changed since the sync."""
    sshd, _ = node_b
    a, b = nodes
    assert invoke(["sync", str(a), f"{sshd.target}:{b}", *sshd.flags()]).code == 0
    (b / "config.json").write_text((b / "config.json").read_text().replace("512", "513"))
    (b / "tokenizer.json").unlink()
    (b / "model-00003-of-00003.safetensors").unlink()
    code, doc, out = doctor(sshd, a, b, tmp_path)
    assert code == 1 and not doc["passed"], out
    node = f"{sshd.target}:{b}"
    assert set(failed(doc)["model.files"]) == {
        f"model file config.json: differs on {node}",
        f"model file tokenizer.json: missing on {node}",
        f"model file model-00003-of-00003.safetensors: missing on {node}",
    }
    since = failed(doc)["model.since_sync"]
    assert f"{node}: config.json: content differs (key hash) (changed since sync)" in since
    assert f"{node}: tokenizer.json: missing (changed since sync)" in since
    assert f"{node}: model-00003-of-00003.safetensors: missing (changed since sync)" in since
    assert "changed since sync" in out


def test_a_corrupt_sync_manifest_is_that_nodes_fail(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 11: not an abort of the whole comparison."""
    sshd, _ = node_b
    a, b = nodes
    (b / ".seatrial-manifest.json").write_text('{"files": {"config.json": ')
    code, doc, out = doctor(sshd, a, b, tmp_path)
    assert code == 1 and list(failed(doc)) == ["model.since_sync"], out
    assert "sync manifest unusable" in failed(doc)["model.since_sync"][0]
    assert {i["name"]: i["verdict"] for i in doc["items"]}["model.files"] == "PASS"


def test_one_unreachable_node_fails_alone(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 11: the reachable nodes are compared, their table and JSON written; exit 4."""
    sshd, _ = node_b
    a, b = nodes
    gone = f"root@127.0.0.2:{b}"
    result = invoke(["doctor", f"local:{a}", f"{sshd.target}:{b}", gone, *sshd.flags(), "--json", str(tmp_path / "d.json"),
                     "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.code == 4, result.output
    doc = json.loads((tmp_path / "d.json").read_text())
    assert list(doc["unreachable"]) == [gone] and "cannot be reached" in doc["unreachable"][gone]
    assert doc["passed"] is False and set(doc["fingerprints"]) == {f"local:{a}", f"{sshd.target}:{b}"}
    names = {i["name"]: i["verdict"] for i in doc["items"]}
    assert names["os"] == names["model.files"] == "PASS"
    assert "reached" in result.output and (tmp_path / "run" / "report.html").exists()


SECRETS = {
    "NCCL_SOCKET_PSK": "psk-planted-0001",
    "VLLM_AUTH": "auth-planted-0002",
    "TORCH_PRIVATE_KEY_PEM": "pem-planted-0003",
    "NCCL_DEBUG_SUBSYS": "Bearer tok-planted-0004",
    "VLLM_ENDPOINT": "http://alice:pw-planted-0005@10.0.0.1:8000/v1",
    "CUDA_CACHE_TAG": "3f" * 32,
}


def test_doctor_writes_and_prints_no_planted_value(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 8: values compared by SHA-256; shown only where neither name nor shape looks secret."""
    sshd, _ = node_b
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "lo")
    code, doc, out = doctor(sshd, *nodes, tmp_path, "--out", str(tmp_path / "run"))
    assert code == 1 and set(failed(doc)) == {f"env.{n}" for n in [*SECRETS, "NCCL_SOCKET_IFNAME"]}
    written = out + "".join(
        p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".html", ".txt")
    )
    for name, value in SECRETS.items():
        secret = value.split()[-1].split("@")[0].split(":")[-1]
        assert secret not in written, f"{name}'s value was written"
    local = doc["fingerprints"][f"local:{nodes[0]}"]["env"]
    assert local["NCCL_SOCKET_IFNAME"]["value"] == "lo"
    assert all("value" not in local[n] and len(local[n]["sha256"]) == 64 for n in SECRETS)


def test_a_node_file_name_that_is_not_utf8_is_named_escaped(
    node_b: tuple[Sshd, Path], nodes: tuple[Path, Path], tmp_path: Path
) -> None:
    sshd, _ = node_b
    a, b = nodes
    with open(os.fsencode(b) + b"/tokenizer_caf\xe9.json", "wb") as fh:
        fh.write(b"{}")
    code, doc, out = doctor(sshd, a, b, tmp_path)
    assert code == 1, out
    assert failed(doc)["model.files"] == [
        f"model file tokenizer_caf\\xe9.json: not on local:{a} on {sshd.target}:{b}"
    ]
