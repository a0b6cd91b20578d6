"""``kv.object``: an S3-compatible endpoint as a KV tier (seed 004: GPU HBM -> local NVMe -> objects over
TCP/TLS), through boto3 (``pip install 'seatrial[io]'``) from the machine seatrial runs on. Objects of one KV
chunk are PUT, then GET, by C concurrent clients for every C in ``kv_concurrency``: per operation the time to
the first byte of the answer's body and to its last, p50/p95/p99, and GB/s. Credentials come only from the
environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, optional ``AWS_SESSION_TOKEN``), never written;
the objects go under a prefix of their own, deleted afterwards; an ``https`` endpoint is TLS with the
certificate verified (``AWS_CA_BUNDLE`` names a private CA)."""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import numpy as np

from seatrial.io.context import IoContext
from seatrial.io.judge import Limit, judge, unavailable
from seatrial.io.kvdisk import chunk_bytes
from seatrial.io.nodes import Node
from seatrial.io.spread import medians
from seatrial.runs.summaries.io import IoRow

CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def _client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    env = os.environ
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], aws_session_token=env.get("AWS_SESSION_TOKEN"),
        region_name=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        config=Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}, max_pool_connections=64),
    )  # fmt: skip


def _pcts(values: list[float], prefix: str) -> dict[str, float | None]:
    arr = np.asarray(values) * 1e3
    return {
        f"{prefix}_{k}_ms": round(float(np.percentile(arr, q)), 3)
        for k, q in (("p50", 50), ("p95", 95), ("p99", 99))
    }


def _level(s3: Any, bucket: str, prefix: str, concurrency: int, count: int, body: bytes) -> dict[str, Any]:
    keys = [f"{prefix}c{concurrency}/{i}" for i in range(count)]

    def put(key: str) -> float:
        t0 = time.perf_counter_ns()
        s3.put_object(Bucket=bucket, Key=key, Body=body)
        return (time.perf_counter_ns() - t0) / 1e9

    def get(key: str) -> tuple[float, float]:
        t0 = time.perf_counter_ns()
        stream = s3.get_object(Bucket=bucket, Key=key)["Body"]
        first, got = stream.read(1), 0
        t1 = time.perf_counter_ns()
        got = len(first) + len(stream.read())
        if got != len(body):
            raise OSError(f"GET {key}: {got} bytes, expected {len(body)}")
        return (t1 - t0) / 1e9, (time.perf_counter_ns() - t0) / 1e9

    with ThreadPoolExecutor(concurrency) as pool:
        t0 = time.perf_counter()
        puts = list(pool.map(put, keys))
        put_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        gets = list(pool.map(get, keys))
        get_s = time.perf_counter() - t0
    total = count * len(body)
    return {"concurrency": concurrency, "put_gbps": round(total / put_s / 1e9, 4), **_pcts(puts, "put"),
            "get_gbps": round(total / get_s / 1e9, 4), **_pcts([g[0] for g in gets], "get_first_byte"),
            **_pcts([g[1] for g in gets], "get")}  # fmt: skip


def _delete_prefix(s3: Any, bucket: str, prefix: str) -> int:
    deleted = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            deleted += len(keys)
    return deleted


def _missing(ctx: IoContext, node: Node) -> str | None:
    cfg = ctx.cfg
    if node.host is not None:
        return "kv.object runs from the machine seatrial runs on (boto3 here): run seatrial io on that node for its view"
    if not cfg.s3_endpoint or not cfg.s3_bucket:
        return "no S3 endpoint: give --s3-endpoint URL and --s3-bucket NAME"
    if missing := [k for k in CREDENTIALS if not os.environ.get(k)]:
        return f"no S3 credentials in the environment: set {' and '.join(missing)}"
    try:
        import boto3  # noqa: F401
    except ImportError:
        return "boto3 is not installed: pip install 'seatrial[io]'"
    return None


def object_trial(ctx: IoContext, node: Node) -> IoRow:
    if why := _missing(ctx, node):
        return unavailable(node.spec, "kv.object", why)
    from botocore.exceptions import BotoCoreError, ClientError

    cfg = ctx.cfg
    assert cfg.s3_endpoint and cfg.s3_bucket
    body = os.urandom(chunk_bytes(cfg.kv_chunk_bytes))
    prefix = f"seatrial-io-{uuid.uuid4().hex[:12]}/"
    s3 = _client(cfg.s3_endpoint)
    runs = []
    try:
        for _ in range(cfg.repeats):
            levels = [_level(s3, cfg.s3_bucket, prefix, c, cfg.kv_chunks, body) for c in cfg.kv_concurrency]
            runs.append(
                {"levels": levels, "get_gbps": levels[-1]["get_gbps"], "put_gbps": levels[-1]["put_gbps"]}
            )
    except (BotoCoreError, ClientError, OSError) as exc:
        return unavailable(node.spec, "kv.object", f"{cfg.s3_endpoint}: {exc}")
    finally:
        deleted = _delete_prefix(s3, cfg.s3_bucket, prefix)
    levels = []
    for i, c in enumerate(cfg.kv_concurrency):
        keys = [k for k in runs[0]["levels"][i] if k != "concurrency"]
        levels.append({"concurrency": c, **medians([r["levels"][i] for r in runs], keys)})
    figures = {"endpoint": cfg.s3_endpoint, "bucket": cfg.s3_bucket, "prefix": prefix, "deleted_objects": deleted,
               "tls": urlparse(cfg.s3_endpoint).scheme == "https", "object_bytes": len(body),
               "chunk_source": cfg.kv_chunk_source, "levels": levels, **medians(runs, ["get_gbps", "put_gbps"])}  # fmt: skip
    e, limits = cfg.expect, []
    for lv in levels:
        at = f"at concurrency {lv['concurrency']}"
        limits += [Limit(f"PUT p95 {at}", lv["put_p95_ms"], e.kv_object_put_p95_ms, "ms", False, "--expect kv.object.put_p95_ms"),
                   Limit(f"GET p95 {at}", lv["get_p95_ms"], e.kv_object_get_p95_ms, "ms", False, "--expect kv.object.get_p95_ms")]  # fmt: skip
    return judge(node.spec, "kv.object", runs, figures, limits, "get_gbps", cfg.max_cv)
