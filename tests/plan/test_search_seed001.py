"""Seed 001: 2.4T parameters in FP8 do not fit one 8x B300 node; NVFP4 does; two FP8 nodes do."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ckptgen.seed001 import write_config_2p4t
from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.plan import PlanRequest, search
from seatrial.plan.source import load_source

GB = 10**9


def test_weights_match_the_seed(tmp_path: Path) -> None:
    fp8 = load_source(None, write_config_2p4t(tmp_path / "fp8.json", "FP8"), "auto")
    nvfp4 = load_source(None, write_config_2p4t(tmp_path / "nvfp4.json", "NVFP4"), "auto")
    fp8_bytes = sum(i.nbytes for i in fp8.items)
    assert 2_390 * GB < fp8_bytes < 2_410 * GB and fp8_bytes > 8 * 288 * GB
    assert sum(i.nbytes for i in nvfp4.items) < 8 * 288 * GB


def test_search_reproduces_the_fit_result(tmp_path: Path) -> None:
    rows = {}
    for fmt in ("FP8", "NVFP4"):
        cfg = write_config_2p4t(tmp_path / f"{fmt}.json", fmt)
        result = search(PlanRequest(config=cfg, hardware="b300", nodes=2, max_model_len=16384))
        assert result.search is not None
        rows[fmt] = result.search
    assert not any(r.fits for r in rows["FP8"] if r.nodes == 1)
    two_node = [r for r in rows["FP8"] if r.nodes == 2 and r.fits]
    assert {(r.tp, r.dp, r.ep) for r in two_node} >= {(4, 4, 16), (8, 2, 16)}
    seed_layouts = [r for r in two_node if (r.tp, r.pp, r.dp) in ((4, 1, 4), (8, 1, 2)) and r.ep == 16]
    assert len(seed_layouts) == 2 and all(145 * GB < r.weights_gib * 1024**3 < 155 * GB for r in seed_layouts)
    assert any(r.fits and (r.tp, r.pp, r.dp) == (8, 1, 1) for r in rows["NVFP4"] if r.nodes == 1)


def test_cli_search_json_and_exit_code(tmp_path: Path) -> None:
    cfg = write_config_2p4t(tmp_path / "fp8.json", "FP8")
    out = tmp_path / "plan.json"
    runner = CliRunner()
    single = runner.invoke(
        app, ["plan", "--config", str(cfg), "--hardware", "b300", "--tp", "8", "--json", str(out)]
    )
    assert single.exit_code == 1
    doc = json.loads(out.read_text())
    assert doc["fits"] is False and doc["per_rank"][0]["weights_gib"] > 260
    assert "weights_exceed_budget" in {f["code"] for f in doc["findings"]}
    found = runner.invoke(
        app,
        [
            "plan",
            "--config",
            str(cfg),
            "--hardware",
            "b300",
            "--nodes",
            "2",
            "--search",
            "--max-model-len",
            "16384",
            "--json",
            str(out),
        ],
    )
    assert found.exit_code == 0, found.output
    doc = json.loads(out.read_text())
    assert doc["search"][0]["fits"] and doc["search"][0]["nodes"] == 2
    assert {"kv_cache_tokens", "max_concurrency", "per_rank", "fits", "findings"} <= set(doc)
