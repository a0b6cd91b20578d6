"""``seatrial hw``: Stage 1 hardware trials with verdicts (see seatrial.hw)."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import ValidationError

from seatrial.cli.common import console, emit_json, out, parse_name_list, verdict_exit
from seatrial.errors import ConfigError
from seatrial.hw import TRIAL_NAMES, HwConfig, HwRun, build_table, render_text, run_hw
from seatrial.report.html import write_report
from seatrial.runs import RunFolder, counts_line


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
    extra = {"environment_gpu": run.report.environment}
    with RunFolder(out_dir, "hw", cfg.model_dump(mode="json"), requests=False, extra=extra) as folder:
        folder.write_summary(sheet)
        folder.write_file("table.txt", render_text(run.report))
        folder.write_file("artifacts.json", run.artifacts)
    write_report(out_dir)


def fleet_run(
    address: str, cfg: HwConfig, nodes: str, margin: float, require: list[str], json_path: Path | None,
    out_dir: Path | None,
) -> None:  # fmt: skip
    """``hw --ray``: every node's sheet, the fleet view, one run folder; exits with their verdicts."""
    from seatrial.hw.fleet import run_hw_ray
    from seatrial.hw.models import HwReport
    from seatrial.runs import TrialResult, judge_run

    summary = run_hw_ray(address, cfg, nodes, margin)
    rows = [TrialResult.model_validate(t) for n in summary["nodes"] for t in n["trials"]]
    fleet = [TrialResult.model_validate(t) for t in summary["fleet"]]
    for n in summary["nodes"]:
        console.print(f"node {n['node'][:12]} ({n['hostname']} {n['address']})", highlight=False)
        out.print(build_table(HwReport.from_json(n)))
    if fleet:
        out.print(build_table(HwReport(gpus=[], trials=fleet)))
    judged = judge_run(rows + fleet, require)
    summary |= {k: judged[k] for k in ("passed", "not_measured", "counts", "missing_required")}
    console.print(f"passed: {summary['passed']} ({counts_line(summary['counts'])})", highlight=False)
    emit_json(json_path, summary)
    if out_dir is not None:
        with RunFolder(
            out_dir, "hw", {**cfg.model_dump(mode="json"), "ray": address, "nodes": nodes}, requests=False
        ) as f:
            f.write_summary(summary)
        write_report(out_dir)
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
        require: str | None = typer.Option(
            None,
            "--require",
            help="trials that must be measured: UNAVAILABLE/UNSUPPORTED there fails the run",
        ),
        ray: str | None = typer.Option(None, "--ray", help="Ray cluster address: the trials on every node"),
        nodes: str = typer.Option("all", "--nodes", help="with --ray: 'all' or node IDs / addresses"),
        fleet_margin: float = typer.Option(
            0.10, "--fleet-margin", help="with --ray: REVIEW_REQUIRED this share below the fleet median"
        ),
    ) -> None:
        """Prove the GPUs: inventory, health, precision paths, burn, collectives, DCGM.

        Exit 0 when the run passed, 1 on a failed verdict, 8 when nothing could be measured."""
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
        if ray:
            fleet_run(ray, cfg, nodes, fleet_margin, parse_name_list(require), json_path, out_dir)
        run = run_hw(cfg)
        sheet = run.report.to_json(parse_name_list(require))
        out.print(build_table(run.report))
        if not run.report.gpus:
            console.print("no GPU could be used: every trial is UNAVAILABLE (see the reasons above)")
        console.print(f"passed: {sheet['passed']} ({counts_line(sheet['counts'])})", highlight=False)
        emit_json(json_path, sheet)
        if out_dir is not None:
            write_hw_folder(out_dir, run, cfg, sheet)
        verdict_exit(run.report.trials, parse_name_list(require))
