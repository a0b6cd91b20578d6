"""``seatrial io``: Stage 2 trials (network, storage, KV tiers) with verdicts (see seatrial.io)."""

from __future__ import annotations

from pathlib import Path

import typer

from seatrial.cli.common import (
    console,
    emit_json,
    escape,
    json_target,
    out,
    out_folder,
    parse_int_list,
    parse_name_list,
    write_folder,
)
from seatrial.io.registry import IO_TRIAL_NAMES


def parse_pairs(text: str | None) -> list[tuple[str, str]] | None:
    """``a=b,c=d`` -> [(a, b), (c, d)]."""
    from seatrial.errors import ConfigError

    if not text:
        return None
    pairs = []
    for part in parse_name_list(text):
        a, eq, b = part.partition("=")
        if not eq or not a or not b or a == b:
            raise ConfigError(f"--pairs {part!r}: expected NODE=NODE (two different nodes)")
        pairs.append((a, b))
    return pairs


def register(app: typer.Typer) -> None:
    @app.command("io")
    def io_command(
        nodes: list[str] = typer.Argument(None, help="local (default) or [user@]host, reached over SSH"),
        trials: str = typer.Option(",".join(IO_TRIAL_NAMES), "--trials", help="comma list; 'storage' = storage.*"),
        expect: list[str] = typer.Option([], "--expect", help="KEY=VALUE: net.gbps, storage.read.gbps, kv.disk.read_p95_ms, ..."),
        path: str | None = typer.Option(None, "--path", help="folder (on every node) under which a scratch folder is made and removed"),
        checkpoint: str | None = typer.Option(None, "--checkpoint", help="checkpoint folder (on every node) storage.load reads"),
        repeats: int = typer.Option(3, "--repeats", help="repeats of every measurement (median and spread)"),
        max_cv: float = typer.Option(0.15, "--max-cv", help="a spread (SD/mean of the repeats) over this is REVIEW_REQUIRED"),
        runtime: float = typer.Option(10.0, "--runtime", help="seconds of fio per measurement"),
        size_mib: int = typer.Option(1024, "--size-mib", help="fio's file per job, MiB"),
        jobs: int = typer.Option(4, "--jobs", help="fio jobs of the sequential and random measurements"),
        kv_config: Path | None = typer.Option(None, "--kv-config", help="model config.json: KV chunk from seatrial plan"),
        kv_blocks: int = typer.Option(1, "--kv-blocks-per-chunk", help="KV blocks per chunk (with --kv-config)"),
        kv_chunk_bytes: int | None = typer.Option(None, "--kv-chunk-bytes", help="KV chunk size (default 1 MiB)"),
        kv_concurrency: str = typer.Option("1,4,16", "--kv-concurrency", help="concurrent writers/readers per level"),
        kv_chunks: int = typer.Option(256, "--kv-chunks", help="chunks written then read per level"),
        net_seconds: float = typer.Option(5.0, "--net-seconds", help="seconds per iperf3 test"),
        net_streams: int = typer.Option(4, "--net-streams", help="parallel TCP streams"),
        net_port: int = typer.Option(5201, "--net-port", help="iperf3's port"),
        pairs: str | None = typer.Option(None, "--pairs", help="node pairs for net.tcp: A=B,C=D (default: every pair of up to 4)"),
        ray: str | None = typer.Option(None, "--ray", help="Ray cluster (HOST:PORT): its every alive node is a node; net.nccl runs one rank per GPU across them"),
        nccl_backend: str = typer.Option("nccl", "--nccl-backend", help="nccl, or gloo: one CPU rank per node (no GPUs)"),
        nccl_max_mib: int = typer.Option(256, "--nccl-max-mib", help="net.nccl's largest message, MiB (from 1 MiB)"),
        s3_endpoint: str | None = typer.Option(None, "--s3-endpoint", help="S3-compatible URL for kv.object (credentials from AWS_* variables)"),
        s3_bucket: str | None = typer.Option(None, "--s3-bucket", help="bucket for kv.object (a prefix of its own, deleted afterwards)"),
        fleet_margin: float = typer.Option(0.10, "--fleet-margin", help="REVIEW_REQUIRED this share below the median of like nodes"),
        require: str | None = typer.Option(None, "--require", help="trials that must be measured"),
        ssh_port: int | None = typer.Option(None, "--ssh-port", help="SSH port of the nodes"),
        ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH identity file"),
        known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file to use"),
        accept_new_host_key: bool = typer.Option(False, "--accept-new-host-key", help="trust an unknown SSH host key on first use"),
        out_dir: Path | None = typer.Option(None, "--out", parser=out_folder, help="run folder to write"),
        json_path: Path | None = typer.Option(None, "--json", parser=json_target, help="write the summary as JSON ('-' = stdout)"),
    ) -> None:  # fmt: skip
        """Network / NVMe / storage OK? iperf3 between nodes, fio on the checkpoint's filesystem, the
        checkpoint's load, local disk and S3 as KV tiers: verdicts per node and trial.

        Exit 0 passed, 1 a failed verdict, 2 bad input (a read-only --path), 4 a node that cannot be reached
        (the others are measured), 8 nothing measured, 130 Ctrl-C (every fio/iperf3 stopped, scratch removed)."""
        from seatrial.cli.progress import verdict_sheet
        from seatrial.errors import ConfigError, config_errors
        from seatrial.fleet.nodes import Ssh
        from seatrial.io.kvchunk import chunk_from_config
        from seatrial.io.models import IoConfig, parse_expect
        from seatrial.io.nodes import Node, parse_node
        from seatrial.io.raynode import ray_nodes
        from seatrial.io.runner import run_io, summary_json
        from seatrial.runs import counts_line
        from seatrial.runs.iotable import io_table
        from seatrial.runs.verdicts import judge_run

        ssh = Ssh(
            port=ssh_port, key=ssh_key, known_hosts=known_hosts, accept_new_host_key=accept_new_host_key
        )
        chunk, source = kv_chunk_bytes, "--kv-chunk-bytes"
        if kv_config is not None:
            chunk, source = chunk_from_config(kv_config, kv_blocks)
        with config_errors("io"):
            cfg = IoConfig(
                trials=parse_name_list(trials), expect=parse_expect(expect), path=path, checkpoint=checkpoint,
                repeats=repeats, max_cv=max_cv, runtime_s=runtime, size_mib=size_mib, jobs=jobs,
                kv_concurrency=parse_int_list(kv_concurrency, "--kv-concurrency"), kv_chunks=kv_chunks,
                net_seconds=net_seconds, net_streams=net_streams, net_port=net_port, pairs=parse_pairs(pairs),
                ray=ray, nccl_backend=nccl_backend, nccl_max_mib=nccl_max_mib,
                s3_endpoint=s3_endpoint, s3_bucket=s3_bucket, fleet_margin=fleet_margin,
                **({"kv_chunk_bytes": chunk, "kv_chunk_source": source} if chunk else {}),
            )  # fmt: skip
        if ray and nodes:
            raise ConfigError("give NODE... (local, over SSH) or --ray ADDRESS (every node of the cluster), not both")
        found: list[Node] = [*ray_nodes(ray, ssh)] if ray else [parse_node(s, ssh) for s in nodes or ["local"]]
        specs = [n.spec for n in found]
        summary = run_io(cfg, found)
        required = parse_name_list(require)
        doc = summary_json(summary, required)
        out.print(verdict_sheet(io_table(summary.results)))
        if summary.fleet:
            out.print(verdict_sheet(io_table(summary.fleet, "fleet-relative (like nodes)")))
        for node, why in summary.unreachable.items():
            console.print(f"[red]UNREACHABLE[/] {escape(node)}: {escape(why)}", highlight=False)
        console.print(f"passed: {doc['passed']} ({counts_line(doc['counts'])})", highlight=False)
        emit_json(json_path, doc)
        write_folder(out_dir, "io", {**cfg.model_dump(mode="json"), "nodes": specs}, doc)
        if summary.unreachable:
            raise typer.Exit(4)
        judged = judge_run([r.as_trial() for r in summary.rows()], required)
        for name in judged["missing_required"]:
            console.print(f"[red]required trial not measured:[/] {name}", highlight=False)
        raise typer.Exit(judged["exit_code"])
