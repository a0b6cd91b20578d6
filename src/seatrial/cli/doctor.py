"""``seatrial doctor NODE...``: every node's fingerprint, compared item by item."""

from __future__ import annotations

from pathlib import Path

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder, write_folder
from seatrial.cli.progress import rich_table


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor_command(
        nodes: list[str] = typer.Argument(None, help="local, [user@]host, or either with :MODEL_DIR"),
        model_dir: str | None = typer.Option(
            None, "--model-dir", help="Checkpoint folder on nodes that name none"
        ),
        files: list[str] = typer.Option(
            [], "--files", help="Files to compare by SHA-256 (patches, launch scripts)"
        ),
        image: str | None = typer.Option(None, "--image", help="Container image whose digest to compare"),
        env_prefix: list[str] = typer.Option(
            [], "--env-prefix", help="Environment prefixes (default NCCL_ VLLM_ CUDA_ GLOO_ TORCH_ UCX_)"
        ),
        python: str = typer.Option(
            "python3", "--python", help="The serving environment's Python (for package versions)"
        ),
        ssh_port: int | None = typer.Option(None, "--ssh-port", help="SSH port of the nodes"),
        ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH identity file"),
        known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file to use"),
        accept_new_host_key: bool = typer.Option(
            False, "--accept-new-host-key", help="Trust an unknown SSH host key on first use (and record it)"
        ),
        ray: str | None = typer.Option(
            None, "--ray", help="Ray cluster address: the probe on every alive node"
        ),
        json_path: Path | None = typer.Option(None, "--json", parser=json_target, help="Write the comparison here"),
        out_dir: Path | None = typer.Option(
            None, "--out", parser=out_folder, help="Run folder (run.json, summary.json, report.html)"
        ),
    ) -> None:
        """Compare the nodes' OS, kernel, Python, packages, driver, image, files, checkpoint and
        environment. Exit 0 when every node matches, 1 when an item differs, 4 when a node cannot be
        reached (the others are still compared and written)."""
        from seatrial.errors import ConfigError
        from seatrial.fleet.doctor import doctor, doctor_ray
        from seatrial.fleet.nodes import Ssh
        from seatrial.runs.fleet import doctor_table

        if ray and nodes:
            raise ConfigError(
                "give NODE... (over SSH) or --ray ADDRESS (every node of the cluster), not both"
            )
        if ray:
            summary = doctor_ray(ray, model_dir=model_dir, files=files, image=image,
                                 env_prefixes=env_prefix or None, python=python)  # fmt: skip
        else:
            ssh = Ssh(
                port=ssh_port, key=ssh_key, known_hosts=known_hosts, accept_new_host_key=accept_new_host_key
            )
            summary = doctor(nodes or [], model_dir=model_dir, files=files, image=image,
                             env_prefixes=env_prefix or None, ssh=ssh, python=python)  # fmt: skip
        out.print(rich_table(doctor_table(summary)))
        for node, why in summary.unreachable.items():
            console.print(f"[red]UNREACHABLE[/] {escape(node)}: {escape(why)}", highlight=False)
        for diff in summary.differences:
            console.print(f"[red]FAIL[/] {diff}", highlight=False)
        console.print(f"passed: {summary.passed}", highlight=False)
        emit_json(json_path, summary)
        config = {
            "nodes": nodes,
            "model_dir": model_dir,
            "files": files,
            "image": image,
            "env_prefix": env_prefix,
        }
        write_folder(out_dir, "doctor", config, summary)
        raise typer.Exit(summary.exit_code())
