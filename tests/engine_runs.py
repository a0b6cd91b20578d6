"""Runs on the session server that more than one test module reads (their fixtures are in conftest.py):
one user's speed, the SLO set from it, and one accept run of saturation and prefix-cache at that SLO."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from tests.clirun import invoke

from seatrial.trials.profile import default_profile_text

#: the capacity tests' workload; the shared saturation run sends it too, so that its ``max_slo_concurrency``
#: and ``seatrial capacity --mode concurrency`` are judged on the same requests against the same bound
WORKLOAD = ["--input-len", "32", "--output-len", "64", "--max-lag-ms", "1000"]


def one_user_level(url: str, tmp: Path) -> dict[str, Any]:
    """The server's speed at one user: 20 requests of WORKLOAD, one at a time."""
    r = invoke(["bench", "--url", url, *WORKLOAD, "--concurrency", "1", "--requests", "20",
                "--json", str(tmp / "c1.json")])  # fmt: skip
    assert r.code == 0, r.output
    return dict(json.loads((tmp / "c1.json").read_text())["levels"][0])


def slo_from(one_user: dict[str, Any]) -> str:
    """Twice one user's TTFT p90 plus half a request's E2E: a request that waits for one of the 4 slots
    misses it, one that finds a slot meets it, on any machine."""
    return f"ttft_ms:{2 * one_user['ttft_ms']['p90'] + 0.5 * one_user['e2e_ms']['p50']:.0f}"


class AcceptRun(NamedTuple):
    code: int
    trials: dict[str, dict[str, Any]]
    summary: dict[str, Any]
    out: Path


def saturation_profile(path: Path, slo: str) -> Path:
    """The shipped profile whose small tree has ``slo`` (at p90, as shipped) and the saturation ladder
    [2, 4, 8, 16] of WORKLOAD's requests (32 tokens in, 64 out; 32 and 32 up to 32 users as shipped)."""
    raw = yaml.safe_load(default_profile_text())
    small = raw["small"]
    small["slo"] = {"ttft_ms": float(slo.split(":")[1]), "percentile": 90}
    small["trials"]["saturation"] |= {"warmup": 2, "output_len": 64, "max_concurrency": 16}
    path.write_text(yaml.safe_dump(raw))
    return path


def saturation_and_prefix_cache(url: str, slo: str, tmp: Path) -> AcceptRun:
    """``seatrial accept --scale small --trials saturation,prefix-cache`` at ``slo``, with a run folder."""
    profile = saturation_profile(tmp / "profile.yaml", slo)
    r = invoke(["accept", "--url", url, "--scale", "small", "--profile", str(profile), "--trials",
                "saturation,prefix-cache", "--out", str(tmp / "run"), "--json", str(tmp / "s.json")])  # fmt: skip
    summary = json.loads((tmp / "s.json").read_text())
    return AcceptRun(r.code, {t["name"]: t for t in summary["trials"]}, summary, tmp / "run")
