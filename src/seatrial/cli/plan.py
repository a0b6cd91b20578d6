"""``seatrial plan (DIR | --config FILE)``: does it fit, per rank, before a byte is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from seatrial.cli.common import emit_json, json_target, out, parse_int_list, parse_name_list

if TYPE_CHECKING:
    from seatrial.plan import PlanResult

_STYLE = {"info": "dim", "warning": "yellow", "error": "bold red"}


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_command(
        directory: Path | None = typer.Argument(
            None, exists=True, help="Checkpoint directory (measured weights)."
        ),
        config: Path | None = typer.Option(None, "--config", help="config.json alone (estimated weights)."),
        hardware: str = typer.Option("local", "--hardware", help="Profile name, local, or custom."),
        gpu_memory_gib: float | None = typer.Option(
            None, "--gpu-memory-gib", help="Memory per GPU (custom)."
        ),
        nodes: int = typer.Option(1, "--nodes"),
        gpus_per_node: int | None = typer.Option(None, "--gpus-per-node"),
        tp: int = typer.Option(1, "--tp"),
        pp: int = typer.Option(1, "--pp"),
        dp: int = typer.Option(1, "--dp"),
        ep: int = typer.Option(1, "--ep", help="Expert-parallel size: 1 or TP x DP."),
        gpu_memory_utilization: float = typer.Option(0.9, "--gpu-memory-utilization"),
        max_model_len: int | None = typer.Option(None, "--max-model-len"),
        max_num_seqs: int | None = typer.Option(None, "--max-num-seqs"),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype"),
        dtype: str = typer.Option("auto", "--dtype"),
        block_size: int | None = typer.Option(None, "--block-size", help="Default 16 (128 on CPU)."),
        max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens"),
        kv_cache_gib: float | None = typer.Option(None, "--kv-cache-gib", help="Fixed KV size per rank."),
        host_reserve_gib: float = typer.Option(
            12.0, "--host-reserve-gib", help="Host memory kept for OS/desktop."
        ),
        pp_layer_partition: str | None = typer.Option(None, "--pp-layer-partition", help="e.g. 3,45"),
        stage_hardware: str | None = typer.Option(None, "--stage-hardware", help="e.g. rtx-3090x2,gb10x2"),
        embeddings_on_host: bool = typer.Option(False, "--embeddings-on-host", help="PLE in host RAM."),
        do_search: bool = typer.Option(False, "--search", help="List every TP/PP/DP/EP layout that fits."),
        json_path: Path | None = typer.Option(
            None, "--json", parser=json_target, help="Write the plan as JSON ('-' for stdout)."
        ),
    ) -> None:
        """Plan memory per rank with vLLM's rules. Exit code 1 when it does not fit (or, with --search,
        when no layout fits)."""
        from seatrial.plan import plan, search
        from seatrial.plan.models import build_request

        request = build_request(
            checkpoint=directory,
            config=config,
            hardware=hardware,
            gpu_memory_gib=gpu_memory_gib,
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ep,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            kv_cache_dtype=kv_cache_dtype,
            dtype=dtype,
            block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens,
            kv_cache_gib=kv_cache_gib,
            host_reserve_gib=host_reserve_gib,
            pp_layer_partition=parse_int_list(pp_layer_partition, "--pp-layer-partition") or None,
            stage_hardware=parse_name_list(stage_hardware) or None,
            embeddings_on_host=embeddings_on_host,
        )
        result = search(request) if do_search else plan(request)
        if str(json_path) != "-":
            render(result)
        emit_json(json_path, result)
        ok = any(r.fits for r in result.search) if result.search is not None else result.fits
        if not ok:
            raise typer.Exit(1)


def render(result: PlanResult) -> None:
    out.print(result.render_ledger(), highlight=False)
    for f in result.findings:
        out.print(f"[{_STYLE[f.severity]}]{f.severity:<7}[/] {f.code}: {f.message}", highlight=False)
    if result.search is None:
        return
    from rich.table import Table

    table = Table("nodes", "TP", "PP", "DP", "EP", "weights GiB/rank", "KV tokens", "max conc.", "verdict")
    for row in result.search:
        table.add_row(
            str(row.nodes),
            str(row.tp),
            str(row.pp),
            str(row.dp),
            str(row.ep),
            f"{row.weights_gib:.2f}",
            f"{row.kv_cache_tokens:,}",
            f"{row.max_concurrency:.2f}",
            row.reason,
        )
    out.print(table)
