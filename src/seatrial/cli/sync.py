"""``seatrial sync SRC DEST...``: put one verified checkpoint on every node (rsync over SSH)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from seatrial.cli.common import console, emit_json, json_target, out, out_folder, write_folder
from seatrial.cli.progress import rich_table
from seatrial.errors import ConfigError, RunInterrupted


class StreamView:
    """Bytes, MB/s per stream and in all, and the ETA, refreshed while the streams run."""

    def __init__(self) -> None:
        from rich.live import Live

        self.live = Live(console=console.get(), refresh_per_second=2, transient=True)
        self.started = time.monotonic()

    def __call__(self, dest: str, streams: list[Any]) -> None:
        from rich.table import Table as RichTable

        table = RichTable(title=f"-> {dest}", title_justify="left")
        for col in ("stream", "files", "bytes", "done", "MB/s"):
            table.add_column(col, justify="right")
        done = total = 0
        for s in streams:
            done, total = done + s.done_bytes, total + s.total_bytes
            table.add_row(s.name, str(len(s.files)), f"{s.total_bytes:,}", f"{s.done_bytes:,}",
                          f"{s.mb_s:,.0f}" if s.mb_s else "–")  # fmt: skip
        elapsed = time.monotonic() - self.started
        rate = done / elapsed if elapsed > 0 else 0
        eta = (total - done) / rate if rate > 0 else None
        table.caption = f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB, {rate / 1e6:,.0f} MB/s" + (
            f", ETA {eta:,.0f} s" if eta is not None else ""
        )
        if console.is_terminal:
            self.live.update(table)
        if not self.live.is_started and console.is_terminal:
            self.live.start()

    def close(self) -> None:
        if self.live.is_started:
            self.live.stop()


def register(app: typer.Typer) -> None:
    @app.command("sync")
    def sync_command(
        src: Path = typer.Argument(..., exists=True, help="The checkpoint folder to replicate"),
        dests: list[str] = typer.Argument(..., help="Destinations: a local path or [user@]host:path"),
        streams: int | None = typer.Option(
            None, "--streams", min=1, help="Parallel rsync streams (default min(8, files))"
        ),
        ssh_port: int | None = typer.Option(None, "--ssh-port", help="SSH port of the destinations"),
        ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH identity file"),
        known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file to use"),
        accept_new_host_key: bool = typer.Option(
            False, "--accept-new-host-key", help="Trust an unknown SSH host key on first use (and record it)"
        ),
        verify: str = typer.Option(
            "key", "--verify", help="key (configs, index, tokenizer, headers) or full (every byte)"
        ),
        check: bool = typer.Option(
            False, "--check", help="Only verify and report differences (exit 1 when any)"
        ),
        bwlimit: float | None = typer.Option(
            None, "--bwlimit", help="Bandwidth limit per stream, MB/s (rsync's)"
        ),
        json_path: Path | None = typer.Option(
            None, "--json", parser=json_target, help="Write the summary and manifest here"
        ),
        out_dir: Path | None = typer.Option(
            None, "--out", parser=out_folder, help="Run folder (run.json, summary.json, report.html)"
        ),
    ) -> None:
        """Replicate SRC to every DEST with parallel rsync streams, then prove each is identical. Exit 0
        when every destination is SRC, 1 when one differs or failed, 2 for bad input, 4 when one could not
        be reached (or its connection dropped), 130 when interrupted (Ctrl-C, SIGTERM, SIGHUP)."""
        from seatrial.fleet.nodes import Ssh
        from seatrial.fleet.sync import sync
        from seatrial.runs.fleet import sync_table

        if verify not in ("key", "full"):
            raise ConfigError(f"--verify must be key or full, got {verify!r}")
        view = StreamView()
        ssh = Ssh(
            port=ssh_port, key=ssh_key, known_hosts=known_hosts, accept_new_host_key=accept_new_host_key
        )
        try:
            summary = sync(src, dests, streams=streams, verify=verify, ssh=ssh, check_only=check,  # type: ignore[arg-type]
                           on_progress=view, bwlimit_mb_s=bwlimit)  # fmt: skip
        except KeyboardInterrupt:
            raise RunInterrupted(
                "interrupted: run the same command again to continue where it stopped"
            ) from None
        finally:
            view.close()
        for note in summary.plan.notes:
            console.print(f"[dim]{note}[/]", highlight=False)
        out.print(rich_table(sync_table(summary)))
        for d in summary.destinations:
            for diff in d.differences:
                console.print(f"[red]{d.dest}[/]: {diff}", highlight=False)
        emit_json(json_path, summary)
        config = {"src": str(src), "dests": dests, "verify": verify, "check": check}
        write_folder(out_dir, "sync", config, summary)
        raise typer.Exit(summary.exit_code())
