"""Issue 43: ``nvidia-smi topo -m`` read into the inventory's evidence and the sheet, on a captured 2-GPU
matrix and constructed 8-GPU ones (NVSwitch, PCIe only; see data/topo/README.md), through a real
subprocess (an executable named nvidia-smi on PATH)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from seatrial.hw.inventory import judge_inventory
from seatrial.hw.topology import TopologyError, describe, gpu_pairs, parse_topology, read_topology
from seatrial.runs.hwsheet import trial_summary
from seatrial.runs.summaries.hw import GpuInfo
from seatrial.runs.verdicts import Verdict

TOPO = Path(__file__).parent / "data" / "topo"


def _read(name: str) -> dict:
    return parse_topology((TOPO / name).read_text())


def test_the_captured_h200_pair_is_one_nv18_link_with_its_affinity() -> None:
    topo = _read("h200x2_captured.txt")
    assert topo["links"] == {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}
    assert topo["affinity"]["GPU1"] == {"CPU Affinity": "0-31", "NUMA Affinity": "0", "GPU NUMA ID": "N/A"}
    assert topo["nics"] == {} and describe(gpu_pairs(topo, [0, 1])) == "GPU0-GPU1: NV18"


def test_eight_gpus_on_nvswitch_are_nv18_between_every_pair_and_nics_stay_out_of_the_pairs() -> None:
    topo = _read("h100x8_nvswitch_constructed.txt")
    assert sorted(topo["links"]) == [f"GPU{i}" for i in range(8)]
    assert topo["links"]["GPU5"]["NIC5"] == "PIX" and topo["links"]["GPU5"]["NIC0"] == "SYS"
    assert topo["nics"]["NIC7"] == "mlx5_7" and topo["affinity"]["GPU4"]["CPU Affinity"] == "56-111,168-223"
    assert describe(gpu_pairs(topo, list(range(8)))) == "NV18 between all 28 GPU pairs"
    assert describe(gpu_pairs(topo, [2, 6])) == "GPU2-GPU6: NV18" and describe(gpu_pairs(topo, [3])) == (
        "one GPU: no GPU pairs"
    )


def test_pcie_only_pairs_are_counted_by_path_most_common_first() -> None:
    pairs = gpu_pairs(_read("l40s_x8_pcie_constructed.txt"), list(range(8)))
    assert describe(pairs) == "GPU pairs: 16 SYS, 8 NODE, 4 PIX"
    assert pairs["PIX"] == ["GPU0-GPU1", "GPU2-GPU3", "GPU4-GPU5", "GPU6-GPU7"]


def test_text_that_is_no_matrix_is_refused() -> None:
    with pytest.raises(TopologyError, match="no tab-separated header"):
        parse_topology("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    with pytest.raises(TopologyError, match="row GPU0 has 1 cells for 2 devices"):
        parse_topology("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \n")


def _fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_inventory_carries_the_topology_into_the_sheet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_smi(tmp_path, monkeypatch, f'[ "$1 $2" = "topo -m" ] && exec cat "{TOPO / "h100x8_nvswitch_constructed.txt"}"\n')
    gpus = [GpuInfo(index=i, name="NVIDIA H100 80GB HBM3") for i in range(8)]
    row = judge_inventory(8, gpus, {"driver_version": "580.1", "cuda_driver_version": "13.0"}, 8,
                          read_topology([g.index for g in gpus]))  # fmt: skip
    assert row.verdict is Verdict.PASS and row.evidence["topology"]["gpu_pairs"]["NV18"][-1] == "GPU6-GPU7"
    assert trial_summary(row) == "8 GPU(s), driver 580.1, CUDA 13.0; NV18 between all 28 GPU pairs"


def test_a_failing_or_missing_nvidia_smi_is_a_reason_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_smi(tmp_path, monkeypatch, 'echo "Failed to initialize NVML: Driver/library version mismatch" >&2; exit 9\n')
    assert read_topology([0, 1]) == (
        None, "nvidia-smi topo -m exited 9: Failed to initialize NVML: Driver/library version mismatch")  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    topo, why = read_topology([0])
    row = judge_inventory(1, [GpuInfo(index=0, name="x")], {}, None, (topo, why))
    assert row.evidence["topology"] is None and row.evidence["topology_unavailable"] == "nvidia-smi not found on PATH"
    assert trial_summary(row) == "1 GPU(s), driver None, CUDA None"
