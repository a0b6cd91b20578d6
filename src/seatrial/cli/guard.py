"""``seatrial guard [options] (-- COMMAND ... | --container NAME)`` and ``seatrial guard restart``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from seatrial.cli.common import console, emit_json, history_target, json_target, out
from seatrial.cli.options import names_of, with_settings
from seatrial.errors import GuardError, as_flag, config_errors

if TYPE_CHECKING:
    from seatrial.guard import GuardConfig

_DEFAULT_HISTORY = Path("guard-history.jsonl")
_HELP = """Launch a server so that memory pressure kills it, not the host.

\b
seatrial guard [OPTIONS] -- COMMAND ...     launch COMMAND in its own process group and guard it
seatrial guard [OPTIONS] --container NAME   guard a running container through the docker CLI
seatrial guard restart [--history FILE]     planned restart: recorded, does not spend the budget
"""


class _GuardGroup(TyperGroup):
    """Keeps everything after ``--`` as the guarded command instead of reading it as a subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta["guard_command"] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


guard_app = typer.Typer(cls=_GuardGroup, add_completion=False, rich_markup_mode=None)


def _config(settings: dict[str, Any], history: Path, meminfo: Path) -> GuardConfig:
    """The watchdog's configuration from the command line's guard settings (ConfigError, exit 2, naming the
    flag)."""
    from seatrial.cli.options import settings_from
    from seatrial.guard.config import GuardFlags

    flags = settings_from(GuardFlags, settings)
    with config_errors(label=lambda loc: "--health-url" if loc == "health.url" else as_flag(loc)):
        return flags.config(history, meminfo)


def _echo(line: dict[str, Any]) -> None:
    """One console line per history event, as it happens."""
    target = line["target"]
    who = target.get("container") or f"pgid {target.get('pgid') or target.get('pid')}"
    memory = f"MemAvailable {line['mem_available_gib']} GiB, swap {line['swap_used_gib']} GiB"
    text = f"{line['time']} {line['event']:<8} {who}: {line['reason']} ({memory})"
    plan = line.get("plan")
    if plan and "spec" in plan and not plan.get("checked"):
        text += f"; plan check skipped: {plan['reason']}"
    console.print(text, highlight=False, markup=False)


def guard(
    ctx: typer.Context,
    history: Path = typer.Option(_DEFAULT_HISTORY, parser=history_target, help="JSON-lines history file."),
    container: str | None = typer.Option(None, help="Guard this running container (docker CLI)."),
    checkpoint: Path | None = typer.Option(None, help="Model directory for the plan check."),
    force: bool = typer.Option(False, help="Launch even when the plan predicts a crossing."),
    meminfo: Path = typer.Option(Path("/proc/meminfo"), hidden=True),
    json_path: Path | None = typer.Option(None, "--json", parser=json_target, help="Write the summary as JSON."),
    **settings: Any,
) -> None:
    """Launch a server so that memory pressure kills the server, not the host."""
    if ctx.invoked_subcommand is not None:
        return
    from seatrial.guard import default_predictor, run_guard

    config = _config(settings, history, meminfo)
    command = ctx.meta.get("guard_command") or ctx.args or None
    outcome = run_guard(config, command, container, checkpoint, force, default_predictor(), _echo)
    payload = {**asdict(outcome), "history": str(outcome.history)}
    emit_json(json_path, payload)
    counts = outcome.counts
    summary = (
        f"guard {outcome.outcome}: {outcome.reason} — kills {counts['kill']}, automatic restarts "
        f"{counts['restart_automatic']}, planned restarts {counts['restart_planned']}; history {history}"
    )
    if outcome.outcome == "gave-up":
        raise GuardError(summary)
    out.print(summary, highlight=False)
    raise typer.Exit(outcome.exit_code)


@guard_app.command("restart")
def restart(
    history: Path = typer.Option(_DEFAULT_HISTORY, parser=history_target, help="History file of the running guard."),
    reason: str = typer.Option("planned restart", help="Why (recorded in the history)."),
    wait: str = typer.Option("60s", help="How long to wait for the guard to restart the server."),
    json_path: Path | None = typer.Option(None, "--json", parser=json_target, help="Write the restart event as JSON."),
) -> None:
    """Planned restart of a guarded server: recorded as planned, does not spend the restart budget."""
    from seatrial.guard import parse_duration_s, request_planned_restart

    event = request_planned_restart(history, reason, parse_duration_s(wait, "--wait"))
    emit_json(json_path, event)
    target = event["target"]
    console.print(f"planned restart done at {event['time']}", highlight=False)
    out.print(f"restarted {target.get('container') or target.get('pid')}: {event['reason']}", highlight=False)


guard_app.callback(invoke_without_command=True)(with_settings(guard, "GuardFlags", names_of("GuardFlags")))


def register(app: typer.Typer) -> None:
    app.add_typer(guard_app, name="guard", help=_HELP)
