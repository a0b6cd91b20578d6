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
    monkeypatch.setenv("NCCL_IB_TOKEN", "do-not-leak")  # named like a secret: dropped on the node
    code, doc, out = doctor(sshd, *nodes, tmp_path)
    assert code == 1 and list(failed(doc)) == ["env.NCCL_SOCKET_IFNAME"]
    assert (
        "lo" in failed(doc)["env.NCCL_SOCKET_IFNAME"][0]
        and "unset" in failed(doc)["env.NCCL_SOCKET_IFNAME"][0]
    )
    assert "do-not-leak" not in (tmp_path / "d.json").read_text() and "do-not-leak" not in out


def test_an_unreachable_node_is_exit_4(nodes: tuple[Path, Path], node_b: tuple[Sshd, Path]) -> None:
    a, b = nodes
    result = invoke(["doctor", f"local:{a}", f"root@127.0.0.2:{b}", *node_b[0].flags()])
    assert result.code == 4 and "cannot be reached" in result.output
