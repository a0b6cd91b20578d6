"""``seatrial hw``: Stage 1 hardware trials with verdicts (see seatrial.hw)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from seatrial.cli.common import (
    console,
    emit_json,
    json_target,
    out,
    out_folder,
    parse_name_list,
    verdict_exit,
    write_folder,
)
from seatrial.errors import ConfigError, config_errors
from seatrial.hw.registry import TRIAL_NAMES

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from seatrial.hw import HwConfig, HwReport, HwRun


def hw_sheet(report: HwReport) -> RichTable:
    """The verdict sheet as ``seatrial hw`` prints it."""
    from seatrial.cli.progress import verdict_sheet
    from seatrial.runs.hwsheet import sheet_table

    return verdict_sheet(sheet_table(report.trials))


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


def write_hw_folder(out_dir: Path, run: HwRun, cfg: HwConfig, sheet: dict[str, object]) -> None:
    """run.json, summary.json (the sheet), table.txt, artifacts.json and report.html."""
    from seatrial.cli.progress import table_text

    files = {"table.txt": table_text(hw_sheet(run.report)), "artifacts.json": run.artifacts}
    extra = {"environment_gpu": run.report.environment}
    write_folder(out_dir, "hw", cfg.model_dump(mode="json"), sheet, extra=extra, files=files)


def fleet_run(
    address: str, cfg: HwConfig, nodes: str, margin: float, require: list[str], json_path: Path | None,
    out_dir: Path | None,
) -> None:  # fmt: skip
    """``hw --ray``: every node's sheet, the fleet view, one run folder; exits with their verdicts."""
    from seatrial.hw import HwReport
    from seatrial.hw.fleet import run_hw_ray
    from seatrial.runs import counts_line
    from seatrial.runs.result import read_trials
    from seatrial.runs.verdicts import verdict_fields

    summary = run_hw_ray(address, cfg, nodes, margin)
    rows = read_trials(t for n in summary["nodes"] for t in n["trials"])
    fleet = read_trials(summary["fleet"])
    for n in summary["nodes"]:
        console.print(f"node {n['node'][:12]} ({n['hostname']} {n['address']})", highlight=False)
        out.print(hw_sheet(HwReport.from_json(n)))
    if fleet:
        out.print(hw_sheet(HwReport(gpus=[], trials=fleet)))
    summary |= verdict_fields(rows + fleet, require)
    console.print(f"passed: {summary['passed']} ({counts_line(summary['counts'])})", highlight=False)
    emit_json(json_path, summary)
    write_folder(out_dir, "hw", {**cfg.model_dump(mode="json"), "ray": address, "nodes": nodes}, summary)
    verdict_exit(rows + fleet, require)


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
        out_dir: Path | None = typer.Option(None, "--out", parser=out_folder, help="run folder to write"),
        json_path: Path | None = typer.Option(
            None, "--json", parser=json_target, help="write the verdict sheet as JSON ('-' = stdout)"
        ),
        expect_gpus: int | None = typer.Option(None, "--expect-gpus", help="inventory FAILs with fewer GPUs"),
        dcgm_level: int = typer.Option(2, "--dcgm-level", help="dcgmi diag -r LEVEL"),
        burn_min_share: float = typer.Option(
            0.9, "--burn-min-share", help="burn FAILs a GPU below this share of the best"
        ),
        matmul_size: int = typer.Option(8192, "--matmul-size", help="M = N = K of the matrix products"),
        require: str | None = typer.Option(
            None,
            "--require",
            help="trials that must be measured: UNAVAILABLE/UNSUPPORTED there fails the run",
        ),
        ray: str | None = typer.Option(None, "--ray", help="Ray cluster address: the trials on every node"),
        nodes: str = typer.Option("all", "--nodes", help="with --ray: 'all' or node IDs / addresses"),
        fleet_margin: float = typer.Option(
            0.10,
            "--fleet-margin",
            help="REVIEW_REQUIRED this share below the median of like GPUs (the host's; with --ray the fleet's)"
            " or, for collectives, below the best smaller group's busbw",
        ),
    ) -> None:
        """Prove the GPUs: inventory, health, precision paths, burn, collectives, DCGM.

        Exit 0 when the run passed, 1 on a failed verdict, 8 when nothing could be measured."""
        from seatrial.hw import HwConfig, run_hw
        from seatrial.runs import counts_line

        with config_errors("hw"):
            cfg = HwConfig(
                gpus=parse_gpus(gpus),
                trials=parse_name_list(trials),
                duration_s=duration,
                expect_gpus=expect_gpus,
                dcgm_level=dcgm_level,
                burn_min_share=burn_min_share,
                matmul_size=matmul_size,
                fleet_margin=fleet_margin,
            )
        if ray:
            fleet_run(ray, cfg, nodes, fleet_margin, parse_name_list(require), json_path, out_dir)
        run = run_hw(cfg)
        sheet = run.report.to_json(parse_name_list(require))
        out.print(hw_sheet(run.report))
        if not run.report.gpus:
            console.print("no GPU could be used: every trial is UNAVAILABLE (see the reasons above)")
        console.print(f"passed: {sheet['passed']} ({counts_line(sheet['counts'])})", highlight=False)
        emit_json(json_path, sheet)
        if out_dir is not None:
            write_hw_folder(out_dir, run, cfg, sheet)
        verdict_exit(run.report.trials, parse_name_list(require))
