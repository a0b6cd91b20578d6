"""The audit reproduces seed 000's arithmetic on the full-shape replica."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from seatrial.checkpoint import AuditReport, post_conversion_bytes
from seatrial.cli.app import app

GIB = 1024**3


def test_totals_and_ple(seed000_report: AuditReport) -> None:
    r = seed000_report
    assert r.total_bytes == 177_598_883_320 == r.index_total_size
    ple = r.component("ple")
    assert ple is not None
    assert (ple.bytes, ple.tensors, ple.params) == (102_400_491_520, 128, 51_200_245_760)
    assert ple.dtypes == {"BF16": 102_400_491_520}
    assert round(ple.bytes / GIB, 2) == 95.37
    experts = r.component("routed_experts")
    assert experts is not None and experts.formats == {"NVFP4": experts.bytes}
    assert round(experts.bytes / GIB, 2) == 63.28 and experts.params == 48 * 512 * 3 * 2560 * 640


def test_largest_shard_is_the_ple_shard(seed000_report: AuditReport) -> None:
    r = seed000_report
    assert r.largest_shard.file == "model-00002-of-00017.safetensors"
    assert (r.largest_shard.bytes, r.largest_shard.tensors) == (102_400_491_520, 128)
    assert len(r.files) == 17


def test_lm_head_fp8_with_row_scale(seed000_report: AuditReport) -> None:
    r = seed000_report
    head = r.component("lm_head")
    assert head is not None
    assert head.dtypes == {"F8_E4M3": 248_320 * 2_560, "BF16": 248_320 * 2}
    assert head.params == 248_320 * 2_560
    (finding,) = [f for f in r.findings if f.code == "lm_head_row_scale"]
    assert "[248320, 2560]" in finding.message and "[248320, 1]" in finding.message
    assert "+635,202,560 bytes" in finding.message


def test_five_checks_and_structure_findings(seed000_report: AuditReport) -> None:
    r = seed000_report
    codes = {f.code: f for f in r.findings}
    assert codes["label_mismatch"].message.startswith("labelled NVFP4; 58% of bytes are BF16 PLE")
    assert "102,400,491,520 bytes" in codes["ple_stored"].message
    assert codes["ple_config_dtype"].severity == "warning"
    assert "128 of" in codes["ple_quant_excluded"].message
    assert "lm_head FP8/channel" in codes["separate_precision"].message
    assert "vision BF16" in codes["separate_precision"].message
    assert "mtp not stored" in codes["separate_precision"].message
    assert "mtp_num_hidden_layers=1" in codes["mtp_not_stored"].message
    assert codes["oversized_shard"].message.startswith("model-00002-of-00017.safetensors holds 95.37 GiB")
    assert "index_total_size" not in codes


def test_post_conversion_formula(seed000_report: AuditReport) -> None:
    est = post_conversion_bytes(seed000_report)
    assert est.ple_delta_bytes == -102_400_491_520 + 51_200_245_760 + 2
    assert est.lm_head_delta_bytes == 635_202_560
    assert est.total_bytes == 127_033_840_122
    assert f"{est.total_gib:.2f}" == "118.31"


def test_converted_replica_matches_formula(
    seed000_report: AuditReport, seed000_converted_report: AuditReport
) -> None:
    converted = seed000_converted_report
    assert converted.total_bytes == post_conversion_bytes(seed000_report).total_bytes
    codes = {f.code for f in converted.findings}
    assert {"label_mismatch", "lm_head_row_scale", "oversized_shard"}.isdisjoint(codes)
    assert "ple_scale_runtime" in codes
    assert post_conversion_bytes(converted).total_bytes == converted.total_bytes  # nothing left to convert


def test_cli_json_fields(seed000: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    result = CliRunner().invoke(app, ["audit", str(seed000), "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["total_bytes"] == 177_598_883_320
    assert doc["largest_shard"] == {
        "file": "model-00002-of-00017.safetensors",
        "bytes": 102_400_491_520,
        "tensors": 128,
    }
    names = [c["name"] for c in doc["components"]]
    assert names[:3] == ["routed_experts", "shared_experts", "attention"] and "ple" in names
    assert {"code", "severity", "message"} == set(doc["findings"][0])
    assert doc["by_dtype"]["BF16"] > doc["by_dtype"]["U8"]
    assert "58% of bytes are BF16 PLE" in result.output
