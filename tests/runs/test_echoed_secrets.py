"""Issue 42 items 1 and 2: what a server says never carries a secret to disk or the console. The synthetic
server echoes the request's Authorization header (a 401 body, an error event mid-stream) and every file
bench, accept and capacity write, and their stdout and stderr, are searched for the API key, the URL's
password and the ``Basic`` token made of them; query-string tokens in ``--url`` and ``--metrics-url`` stay
out of ``run.json``."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seatrial.testing.server import SyntheticConfig, ThreadedServer

KEY = "sk-echoed-KEY-5150"
PASSWORD = "pw-echoed-PASS-1984"
QUERY_TOKEN = "qtok-echoed-7777"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode().rstrip("=")
SECRETS = (KEY, PASSWORD, BASIC, QUERY_TOKEN)


@pytest.fixture(scope="module", params=["echo_auth", "echo_auth_stream"])
def server(request: pytest.FixtureRequest) -> Iterator[ThreadedServer]:
    with ThreadedServer(
        SyntheticConfig(itl_s=0.001, ttft_s=0.002, fault=request.param, fault_every=2)
    ) as srv:
        yield srv


def seatrial(args: list[str], cwd: Path, key: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key:
        env["OPENAI_API_KEY"] = KEY
    cmd = [sys.executable, "-m", "seatrial.cli.app", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def url_for(srv: ThreadedServer, key: bool) -> str:
    return srv.url if key else srv.url.replace("http://", f"http://alice:{PASSWORD}@")


def assert_nothing_echoed(root: Path, proc: subprocess.CompletedProcess[str]) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "requests.jsonl" for p in files), files
    for path in files:
        data = path.read_text(errors="replace")
        for secret in SECRETS:
            assert secret not in data, f"{secret} in {path}"
    for secret in SECRETS:
        assert secret not in proc.stdout + proc.stderr, secret
    rows = [
        json.loads(line) for p in files if p.name == "requests.jsonl" for line in p.read_text().splitlines()
    ]
    echoed = [r["error"] for r in rows if r.get("error") and "Incorrect API key" in r["error"]]
    assert echoed and all("<redacted>" in e for e in echoed), rows[:3]  # the server did echo, seatrial hid it


@pytest.mark.parametrize("key", [True, False], ids=["bearer-key", "url-credentials"])
def test_bench_writes_no_echoed_credential(server: ThreadedServer, tmp_path: Path, key: bool) -> None:
    args = ["bench", "--url", url_for(server, key), "--workload", "random", "--input-len", "8", "--output-len", "6",
            "--requests", "6", "--warmup", "0", "--out", "run", "--json", "b.json"]  # fmt: skip
    proc = seatrial(args, tmp_path, key)
    assert proc.returncode in (0, 1, 4), proc.stderr[-2000:]  # 4: the server refused every request
    assert_nothing_echoed(tmp_path, proc)


def test_accept_writes_no_echoed_credential(server: ThreadedServer, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("trials: {basic: {requests: 4, input_len: 8, output_len: 6}}\n")
    args = ["accept", "--url", url_for(server, False), "--trials", "basic", "--profile", str(profile),
            "--out", "run", "--json", "a.json"]  # fmt: skip
    proc = seatrial(args, tmp_path, False)
    assert proc.returncode in (0, 1, 4), proc.stderr[-2000:]
    assert_nothing_echoed(tmp_path, proc)


def test_capacity_writes_no_echoed_credential(server: ThreadedServer, tmp_path: Path) -> None:
    args = ["capacity", "--url", url_for(server, True), "--input-len", "8", "--output-len", "6", "--slo",
            "ttft_ms:1000", "--attainment", "0.3", "--mode", "concurrency", "--start", "1", "--max-rate", "2",
            "--probe-requests", "10", "--max-probe-requests", "10", "--max-lag-ms", "500", "--out", "run",
            "--json", "c.json"]  # fmt: skip
    proc = seatrial(args, tmp_path, True)
    assert proc.returncode in (0, 1, 4), proc.stderr[-2000:]
    assert_nothing_echoed(tmp_path, proc)


@pytest.mark.parametrize("where", ["--metrics-url", "--url"])
def test_query_string_tokens_stay_out_of_run_json(tmp_path: Path, where: str) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.002)) as srv:
        urls = {"--url": srv.url, "--metrics-url": f"{srv.url}/metrics?x=1&token={QUERY_TOKEN}"}
        if where == "--url":
            urls["--url"] = f"{srv.url}?api_key={QUERY_TOKEN}"
        args = ["bench", "--url", urls["--url"], "--metrics-url", urls["--metrics-url"], "--workload", "random",
                "--input-len", "8", "--output-len", "4", "--requests", "2", "--warmup", "0", "--out", "run",
                "--json", "b.json"]  # fmt: skip
        proc = seatrial(args, tmp_path, False)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert QUERY_TOKEN not in path.read_text(errors="replace"), path
    assert QUERY_TOKEN not in proc.stdout + proc.stderr
    url = run["config"]["target"]["url" if where == "--url" else "metrics_url"]
    assert url.endswith("api_key=<redacted>" if where == "--url" else "x=1&token=<redacted>"), url


def test_redact_text_hides_known_secrets_and_their_encodings() -> None:
    from seatrial.runs.redact import redact_text, remember

    remember("sk-unit-KEY-0042", basic=("bob", "hunter2-unit"))
    token = base64.b64encode(b"bob:hunter2-unit").decode()
    text = f"bad key sk-unit-KEY-0042; got Basic {token} or {token}; pw=hunter2-unit"
    assert redact_text(text) == "bad key <redacted>; got Basic <redacted> or <redacted>; pw=<redacted>"
    assert (
        redact_text("GET /m?token=abc&n=2&api_key=k1#f") == "GET /m?token=<redacted>&n=2&api_key=<redacted>#f"
    )
    assert redact_text("Basic information, 12 tokens") == "Basic information, 12 tokens"
