"""kv.object against a real S3-compatible server on 127.0.0.1: moto's standalone server (PyPI ``moto[server]``,
the ``dev`` extra). It is real enough for what is tested here: boto3 speaks S3's HTTP API to it over a socket
(signed requests, PUT/GET bodies, ListObjectsV2 pagination, DeleteObjects), so the trial's client path, its
timing of first and last byte, its prefix and its clean-up all run for real; its speed is not a storage
system's (no MinIO server is in the registries this project installs from)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
    boto3 = pytest.importorskip("boto3")
    for key, value in {
        "AWS_ACCESS_KEY_ID": "test-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="kv-tier")
    yield url
    server.stop()


def test_put_get_latencies_and_prefix_deleted(s3: str, tmp_path: Path) -> None:
    import boto3

    res = invoke(["io", "--trials", "kv.object", "--s3-endpoint", s3, "--s3-bucket", "kv-tier", "--repeats", "2",
                  "--kv-concurrency", "1,4", "--kv-chunks", "8", "--kv-chunk-bytes", "262144", "--max-cv", "10",
                  "--json", str(tmp_path / "j.json")])  # fmt: skip
    (row,) = json.loads((tmp_path / "j.json").read_text())["results"]
    assert res.code == 0 and row["verdict"] == "PASS", res.output
    f = row["figures"]
    assert (
        f["tls"] is False and f["object_bytes"] == 262144 and f["deleted_objects"] == 2 * 8
    )  # a key per level and chunk, rewritten by each repeat
    for lv in f["levels"]:
        assert (
            0 < lv["get_first_byte_p50_ms"] <= lv["get_p50_ms"] and lv["put_p99_ms"] >= lv["put_p50_ms"] > 0
        )
    left = boto3.client("s3", endpoint_url=s3, region_name="us-east-1").list_objects_v2(Bucket="kv-tier")
    assert left.get("KeyCount", 0) == 0  # its prefix was deleted
    assert "test-secret" not in (tmp_path / "j.json").read_text()


def test_no_credentials_is_unavailable(s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    res = invoke(
        [
            "io",
            "--trials",
            "kv.object",
            "--s3-endpoint",
            s3,
            "--s3-bucket",
            "kv-tier",
            "--json",
            str(tmp_path / "j.json"),
        ]
    )
    (row,) = json.loads((tmp_path / "j.json").read_text())["results"]
    assert res.code == 8 and "AWS_SECRET_ACCESS_KEY" in row["reason"]
