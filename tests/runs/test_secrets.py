"""Issue 16 item 11: no secret reaches a file. Secrets are planted where users put them (the API key in
the environment, credentials in the URL, --api-key on the server's command line) and every file each
command writes is searched for them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.servers import synthetic_server

from seatrial.testing.server import ThreadedServer

KEY = "sk-planted-KEY-4711"
PASSWORD = "pw-planted-PASS-0815"
TOKEN = "hf_planted_TOKEN_42"


server = synthetic_server(itl_s=0.001, ttft_s=0.002)


def url_with_credentials(srv: ThreadedServer) -> str:
    return srv.url.replace("http://", f"http://alice:{PASSWORD}@")


def seatrial(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HF_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "seatrial.cli.app", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def assert_no_secret(root: Path, proc: subprocess.CompletedProcess[str]) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, f"nothing was written under {root}"
    for path in files:
        data = path.read_bytes()
        for secret in (KEY, PASSWORD, TOKEN):
            assert secret.encode() not in data, f"{secret} in {path}"
    for secret in (KEY, PASSWORD, TOKEN):
        assert secret not in proc.stdout + proc.stderr
    return files


def test_bench_with_credentials_in_the_url_and_a_key_in_the_environment(
    server: ThreadedServer, tmp_path: Path
) -> None:
    args = ["bench", "--url", url_with_credentials(server), "--workload", "random", "--input-len", "8",
            "--output-len", "4", "--requests", "4", "--warmup", "0", "--out", "run", "--json", "b.json"]  # fmt: skip
    proc = seatrial(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]  # no aiohttp traceback over URL credentials
    files = assert_no_secret(tmp_path, proc)
    assert {p.name for p in files} >= {"run.json", "requests.jsonl", "summary.json", "report.html", "b.json"}
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["config"]["target"]["url"] == server.url  # the credentials are gone, the URL is not


def test_accept_run_folder_and_report(server: ThreadedServer, tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("trials: {basic: {requests: 2, input_len: 8, output_len: 4}}\n")
    args = ["accept", "--url", url_with_credentials(server), "--trials", "basic", "--profile", str(profile),
            "--out", "run", "--json", "a.json"]  # fmt: skip
    proc = seatrial(args, tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    files = assert_no_secret(tmp_path / "run", proc)
    assert {p.name for p in files} >= {"run.json", "requests.jsonl", "summary.json", "report.html"}
    assert json.loads((tmp_path / "a.json").read_text())["url"] == server.url


def test_guard_history_and_json_drop_the_servers_api_key(tmp_path: Path) -> None:
    history = tmp_path / "out" / "guard-history.jsonl"
    args = ["guard", "--min-available-gib", "0.1", "--history", str(history), "--json", str(tmp_path / "out" / "g.json"),
            "--", "sh", "-c", "exit 0", "--api-key", KEY, f"HF_TOKEN={TOKEN}"]  # fmt: skip
    proc = seatrial(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert_no_secret(tmp_path / "out", proc)
    start = json.loads(history.read_text().splitlines()[0])
    assert start["event"] == "start" and start["target"]["command"][-3:] == [
        "--api-key",
        "<redacted>",
        "HF_TOKEN=<redacted>",
    ]


def test_hw_run_folder(tmp_path: Path) -> None:
    proc = seatrial(["hw", "--out", "run", "--json", "hw.json", "--trials", "inventory"], tmp_path)
    assert proc.returncode in (0, 8), proc.stderr[-2000:]
    assert_no_secret(tmp_path, proc)


def test_secret_names_are_told_from_counts_and_rates() -> None:
    from seatrial.runs.redact import secret_name

    assert all(secret_name(n) for n in ("api_key", "hf_token", "--api-key", "HF_TOKEN", "Authorization"))
    assert not any(secret_name(n) for n in ("api_key_env", "max_tokens", "joules_per_output_token"))


@pytest.mark.parametrize(
    "name",
    ["NCCL_SOCKET_PSK", "VLLM_AUTH", "TORCH_PRIVATE_KEY_PEM", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "VLLM_API_KEY",
     "NCCL_IB_HMAC", "UCX_SIGN", "GLOO_CRED_FILE", "VLLM_COOKIE", "CUDA_PASSWORD2", "TORCH_AUTHTOKEN"],
)  # fmt: skip
def test_environment_names_that_look_secret(name: str) -> None:
    from seatrial.runs.redact import env_digests, secret_env_name

    assert secret_env_name(name)
    assert env_digests({name: "plain-looking"})[name] == {
        "sha256": _sha("plain-looking"),
        "hidden": "named like a secret",
    }


def test_the_working_folder_is_no_password(tmp_path: Path) -> None:
    # PWD is also a password's abbreviation (DB_PWD): the shell's working folder held as a secret redacted
    # every path under it in run.json, and a resumed experiment then found its own python "gone".
    from seatrial.runs.redact import redact_text, remember_env, secret_env_name

    assert secret_env_name("DB_PWD") and not secret_env_name("PWD") and not secret_env_name("OLDPWD")
    remember_env({"PWD": str(tmp_path), "OLDPWD": str(tmp_path.parent)})
    assert redact_text(f"{tmp_path}/.venv/bin/python") == f"{tmp_path}/.venv/bin/python"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    "value",
    ["Bearer sk-abcdef123456", "http://bob:hunter2@10.0.0.1:8000", "-----BEGIN PRIVATE KEY-----\nMIIE",
     "3f" * 20, "hf_AbCdEfGhIjKlMnOpQrStUvWx12", "token abcdefgh12"],
)  # fmt: skip
def test_values_shaped_like_secrets_are_hidden_under_any_name(value: str) -> None:
    from seatrial.runs.redact import env_digests

    assert env_digests({"NCCL_DEBUG_FILE": value})["NCCL_DEBUG_FILE"] == {
        "sha256": _sha(value),
        "hidden": "shaped like a secret",
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [("NCCL_SOCKET_IFNAME", "eth0,ib0"), ("TOKENIZERS_PARALLELISM", "false"), ("NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"),
     ("CUDA_VISIBLE_DEVICES", "GPU-8f6e2c1a-3b4d-4e5f-9a8b-7c6d5e4f3a2b"), ("VLLM_MAX_TOKENS", "4096"),
     ("NCCL_DEBUG_FILE", "/var/log/nccl/%h.%p.log"), ("UCX_TLS", "rc,cuda_copy,cuda_ipc")],
)  # fmt: skip
def test_ordinary_variables_are_shown(name: str, value: str) -> None:
    from seatrial.runs.redact import env_digests

    assert env_digests({name: value})[name] == {"sha256": _sha(value), "value": value}
