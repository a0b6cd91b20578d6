"""``seatrial audit DIR``: what a checkpoint really holds, from headers only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from seatrial.cli.common import emit_json, json_target, out

if TYPE_CHECKING:
    from seatrial.checkpoint import AuditReport

GIB = 1024**3
_STYLE = {"info": "dim", "warning": "yellow", "error": "bold red"}


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_command(
        directory: Path = typer.Argument(
            ..., exists=True, help="Checkpoint directory (safetensors + config.json)."
        ),
        json_path: Path | None = typer.Option(
            None, "--json", parser=json_target, help="Write the report as JSON ('-' for stdout)."
        ),
    ) -> None:
        """Audit a checkpoint: bytes, logical parameters and precision per component, and findings.

        Exit code 1 when a finding has severity error.
        """
        from seatrial.checkpoint import audit

        report = audit(directory)
        if str(json_path) != "-":
            render(report)
        emit_json(json_path, report)
        if any(f.severity == "error" for f in report.findings):
            raise typer.Exit(1)


def render(report: AuditReport) -> None:
    """Print the audit as a summary line, a component table and the findings."""
    out.print(
        f"[bold]{report.checkpoint}[/]  {report.total_bytes:,} bytes ({report.total_bytes / GIB:.2f} GiB), "
        f"{report.total_params:,} parameters, {len(report.files)} files; "
        f"labelled {report.declared.label} ({report.declared.source})",
        highlight=False,
    )
    from rich.table import Table

    table = Table("component", "GiB", "share", "params", "formats", "tensors")
    for c in report.components:
        formats = ", ".join(f"{k} {v / GIB:.2f}" for k, v in sorted(c.formats.items(), key=lambda kv: -kv[1]))
        share = c.bytes / report.total_bytes if report.total_bytes else 0.0
        table.add_row(
            c.name, f"{c.bytes / GIB:.2f}", f"{share:.1%}", f"{c.params:,}", formats, f"{c.tensors:,}"
        )
    out.print(table)
    s = report.largest_shard
    out.print(f"largest shard: {s.file} {s.bytes / GIB:.2f} GiB, {s.tensors:,} tensors", highlight=False)
    for f in report.findings:
        out.print(f"[{_STYLE[f.severity]}]{f.severity:<7}[/] {f.code}: {f.message}", highlight=False)
