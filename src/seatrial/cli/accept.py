"""``seatrial accept``: Stage 3a serving trials that end in verdicts with evidence."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from seatrial.cli.common import (
    console,
    emit_json,
    escape,
    json_target,
    out,
    out_folder,
    parse_name_list,
    partial_on_interrupt,
    verdict_exit,
)
from seatrial.cli.options import settings_from, with_settings
from seatrial.cli.progress import LiveProgress, verdict_sheet
from seatrial.errors import ConfigError

if TYPE_CHECKING:
    from seatrial.runs.summaries.bench import PlanCheck


def accept(
    url: Annotated[str, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000")],
    profile: Annotated[Path | None, typer.Option(help="Profile YAML; default: the shipped profile")] = None,
    trials: Annotated[
        str | None, typer.Option(help="Subset, e.g. saturation,prefix-cache (default: the profile's)")
    ] = None,
    scale: Annotated[str, typer.Option(help="small (CPU server) or full")] = "full",
    require: Annotated[
        str | None,
        typer.Option(help="Trials that must be measured: UNAVAILABLE/UNSUPPORTED there fails the run"),
    ] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", parser=out_folder, help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")] = None,
    **settings: Any,
) -> None:
    """Run the acceptance trials; exit 0 only when the run passed (a PASS and no failed verdict),
    1 on a failed verdict, 8 when nothing could be measured."""
    if scale not in ("small", "full"):
        raise ConfigError(f"--scale must be small or full, got {scale!r}")
    if trials is not None and not parse_name_list(trials):
        raise ConfigError("--trials names no trial; leave it out to run the profile's")
    from seatrial.load.config import ObserveConfig
    from seatrial.load.settings import BenchSettings, ClientSettings
    from seatrial.runs.result import read_trials
    from seatrial.trials import run_accept

    chosen = settings_from(BenchSettings, settings)
    with partial_on_interrupt(out_dir, None), LiveProgress() as progress:
        summary = run_accept(
            url,
            model=chosen.model,
            tokenizer=chosen.tokenizer,
            api_key_env=chosen.api_key_env,
            profile=profile,
            trials=parse_name_list(trials) or None,
            scale="small" if scale == "small" else "full",
            out_dir=out_dir,
            progress=progress,
            require=parse_name_list(require),
            seed=chosen.seed,
            clients=ClientSettings(workers=chosen.workers, ray=chosen.ray, clients=chosen.clients),
            observe={k: getattr(chosen, k) for k in ObserveConfig.model_fields},
        )
    check = show(summary, out_dir)
    emit_json(json_path, summary)
    if check is not None and check.verdict == "FAIL":
        raise typer.Exit(1)
    verdict_exit(read_trials(summary["trials"]), parse_name_list(require))


def show(summary: dict[str, Any], out_dir: Path | None) -> PlanCheck | None:
    """The verdict sheet, the report's path, the counts, the spans and the plan check on the console; the
    plan check, if the run made one."""
    from seatrial.runs import counts_line
    from seatrial.runs.levels import plan_check_line, span_lines
    from seatrial.runs.summaries.bench import PlanCheck, SpanCounts
    from seatrial.runs.verdicts import trial_table

    out.print(verdict_sheet(trial_table(summary["trials"])))
    if out_dir:
        console.print(f"report: {out_dir / 'report.html'}", highlight=False)
    console.print(f"passed: {summary['passed']} ({counts_line(summary['counts'])})", highlight=False)
    for line in span_lines(SpanCounts.model_validate(summary["spans"]) if "spans" in summary else None):
        console.print(f"[yellow]spans[/] {escape(line)}", highlight=False)
    check = PlanCheck.model_validate(summary["plan_check"]) if "plan_check" in summary else None
    if check is not None:
        console.print(escape(plan_check_line(check)), highlight=False)
    return check


#: accept's options that are bench's too, from the one settings model
OPTIONS = ["model", "tokenizer", "api_key_env", "seed", "workers", "ray", "clients", "otlp_listen", "otlp_flush_s", "gpu_telemetry",
           "plan"]  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("accept")(with_settings(accept, "BenchSettings", OPTIONS))
