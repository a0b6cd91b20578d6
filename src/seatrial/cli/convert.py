"""``seatrial convert SRC DST``: FP8 tables, lm_head restore, config surgery; resumable."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from seatrial.cli.common import console, emit_json, json_target, out
from seatrial.errors import ConfigError, as_flag, config_errors

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from seatrial.checkpoint.convert import ConvertResult


class _RichBytes:
    """Progress sink that shows one rich bar per phase, in bytes."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, name: str, total_bytes: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[-1].total)
        self._task = self._progress.add_task(name, total=max(total_bytes, 1))

    def advance(self, nbytes: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, nbytes)


def register(app: typer.Typer) -> None:
    @app.command("convert")
    def convert(
        src: Path = typer.Argument(..., exists=True, help="Source checkpoint directory (only read)."),
        dst: Path = typer.Argument(..., help="Destination directory (must not exist unless --resume)."),
        embedding_fp8: str = typer.Option(
            "default",
            "--embedding-fp8",
            help="Regex of tables to store as FP8 E4M3FN with one global scale; 'default' (the n-gram "
            "embedding shards, ngram_embedding.*weight) or 'off'.",
        ),
        shards: int | None = typer.Option(
            None, "--shards", min=1, help="Output files per table (default: one per shard tensor)."
        ),
        max_file_bytes: int | None = typer.Option(
            None, "--max-file-bytes", min=1, help="Upper bound on each table output file."
        ),
        scale_name: str = typer.Option(
            "{table}.weight_scale", "--scale-name", help="Scale tensor name; {table} is the table prefix."
        ),
        lm_head_bf16: bool = typer.Option(
            False, "--lm-head-bf16", help="Restore an FP8 lm_head with its scale to BF16."
        ),
        set_config: list[str] = typer.Option(
            [], "--set-config", help="KEY=VALUE edit of config.json (dotted key; repeatable)."
        ),
        resume: bool = typer.Option(False, "--resume", help="Continue an interrupted conversion into DST."),
        fidelity_row_stride: int = typer.Option(
            16, "--fidelity-row-stride", min=1, help="Measure fidelity on every n-th row."
        ),
        json_path: Path | None = typer.Option(
            None, "--json", parser=json_target, help="Write the JSON summary here ('-' for stdout)."
        ),
    ) -> None:
        """Convert a checkpoint: FP8 embedding tables, BF16 lm_head, config edits; safe to resume."""
        from seatrial.checkpoint.convert import ConvertOptions, convert_checkpoint

        pattern = _embedding_pattern(embedding_fp8)
        with config_errors("convert", label=as_flag):
            opts = ConvertOptions(
                src=src, dst=dst, embedding_pattern=pattern,
                shards=shards, max_file_bytes=max_file_bytes, scale_name=scale_name,
                lm_head_bf16=lm_head_bf16, set_config=set_config, resume=resume,
                fidelity_row_stride=fidelity_row_stride,
            )  # fmt: skip
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console.get(), transient=True) as bar:
            result = convert_checkpoint(opts, _RichBytes(bar))
        print_result(result)
        emit_json(json_path, result.model_dump(mode="json"))


def _embedding_pattern(value: str) -> str | None:
    """``--embedding-fp8`` value: a regex, ``default`` (the PLE table) or ``off``. A value that looks like a
    flag means the PATTERN was left out and the next flag was taken for it."""
    if value.startswith("-"):
        raise ConfigError(
            f"--embedding-fp8 takes a PATTERN ('default' for the PLE table, 'off' for none), got {value!r}"
        )
    from seatrial.checkpoint.convert import DEFAULT_EMBEDDING_PATTERN

    return {"off": None, "default": DEFAULT_EMBEDDING_PATTERN}.get(value, value)


def print_result(result: ConvertResult) -> None:
    """Seed 000's fidelity table per converted table, then sizes and files."""
    from rich.table import Table

    for table in result.tables:
        fid = table.fidelity
        grid = Table(title=f"{table.name}: {table.source_dtype} -> FP8 E4M3FN, scale {table.scale!r}")
        grid.add_column("metric")
        grid.add_column("value", justify="right")
        grid.add_row("SNR", f"{fid.snr_db:.2f} dB")
        grid.add_row("row cosine mean", f"{fid.row_cosine_mean:.5f}")
        grid.add_row("row cosine min", f"{fid.row_cosine_min:.5f}")
        grid.add_row("flushed to zero", f"{fid.flushed_to_zero_share * 100:.3f}%")
        grid.add_row("rows measured", f"{fid.rows_measured:,} (every {fid.row_stride})")
        worst = sorted(fid.shards, key=lambda s: -s.precision_lost_bits)[:5]
        for shard in worst:
            grid.add_row(
                f"lost vs local scale: {shard.tensor.rsplit('.', 2)[-2]}",
                f"{shard.precision_lost_bits:.2f} bit",
            )
        out.print(grid)
    if result.lm_head is not None:
        lm = result.lm_head
        out.print(
            f"{lm.tensor}: FP8 -> BF16; {lm.inexact_elements:,} of {lm.elements:,} elements rounded,"
            f" max error {lm.max_abs_rounding_error:.3g}"
        )
    delta = result.total_size_after - result.total_size_before
    out.print(f"total_size {result.total_size_before:,} -> {result.total_size_after:,} bytes ({delta:+,})")
    rss_mib = result.peak_rss_bytes / 2**20
    out.print(
        f"files {result.files}, {len(result.config_changes)} config changes, peak RSS {rss_mib:.0f} MiB,"
        f" {result.kernel} loops"
    )
