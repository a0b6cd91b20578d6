"""``seatrial hw``: Stage 1 hardware trials with verdicts (see seatrial.hw)."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import ValidationError

from seatrial.cli.common import console, emit_json, out, parse_name_list
from seatrial.errors import ConfigError
from seatrial.hw import TRIAL_NAMES, HwConfig, build_table, run_hw
from seatrial.hw.runfolder import write_run_folder


def parse_gpus(text: str) -> list[int] | None:
    """``all`` -> None (every GPU); ``0,1`` -> [0, 1]; anything else is a ConfigError naming --gpus."""
    if text.strip().lower() == "all":
        return None
    try:
        indices = [int(p) for p in parse_name_list(text)]
    except ValueError:
        raise ConfigError(f"--gpus: expected 'all' or indices like 0,1; got {text!r}") from None
    if not indices or min(indices) < 0:
        raise ConfigError(f"--gpus: expected 'all' or non-negative indices like 0,1; got {text!r}")
    return indices


def register(app: typer.Typer) -> None:
    @app.command("hw")
    def hw(
        gpus: str = typer.Option("all", "--gpus", help="'all' or GPU indices, e.g. 0,1"),
        trials: str = typer.Option(
            ",".join(TRIAL_NAMES), "--trials", help="comma list; 'precision' = all paths"
        ),
        duration: float = typer.Option(
            60.0, "--duration", help="seconds of load per precision trial and for burn"
        ),
        out_dir: Path | None = typer.Option(None, "--out", help="run folder to write"),
        json_path: Path | None = typer.Option(
            None, "--json", help="write the verdict sheet as JSON ('-' = stdout)"
        ),
        expect_gpus: int | None = typer.Option(None, "--expect-gpus", help="inventory FAILs with fewer GPUs"),
        dcgm_level: int = typer.Option(2, "--dcgm-level", help="dcgmi diag -r LEVEL"),
        burn_min_share: float = typer.Option(
            0.9, "--burn-min-share", help="burn FAILs a GPU below this share of the best"
        ),
        matmul_size: int = typer.Option(8192, "--matmul-size", help="M = N = K of the matrix products"),
    ) -> None:
        """Prove the GPUs: inventory, health, precision paths, burn, collectives, DCGM."""
        try:
            cfg = HwConfig(
                gpus=parse_gpus(gpus),
                trials=parse_name_list(trials),
                duration_s=duration,
                expect_gpus=expect_gpus,
                dcgm_level=dcgm_level,
                burn_min_share=burn_min_share,
                matmul_size=matmul_size,
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"hw: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None
        run = run_hw(cfg)
        out.print(build_table(run.report))
        if not run.report.gpus:
            console.print("no GPU could be used: every trial is UNAVAILABLE (see the reasons above)")
        emit_json(json_path, run.report.to_json())
        if out_dir is not None:
            write_run_folder(out_dir, run, cfg)
        raise typer.Exit(0 if run.report.ok else 1)
