"""Issue 42 items 4, 5, 6, 8 (paths) and 13: what seatrial writes never replaces what is not a regular file,
never follows a link planted in a run folder, never mixes two runs in one folder, and a bad ``--json``,
``--out`` or ``--history`` is exit 2 with one line as the command line is read, before any work, for every
command that takes one (found from the CLI itself, so a new command is covered too)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from tests.clirun import invoke
from tests.servers import synthetic_server

from seatrial.cli.app import app
from seatrial.testing.server import ThreadedServer

FLAGS = ("--json", "--out", "--history")


def _commands() -> list[tuple[tuple[str, ...], str]]:
    root: Any = typer.main.get_command(app)  # a group of typer's own click
    ctx = type(root).context_class(root)
    found = []
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        assert command is not None
        subs = [((name,), command)]
        if hasattr(command, "list_commands"):
            subs += [((name, s), command.get_command(ctx, s)) for s in command.list_commands(ctx)]
        found += [(path, flag) for path, cmd in subs for p in cmd.params for flag in p.opts if flag in FLAGS]
    return found


COMMANDS = _commands()


def test_every_command_that_writes_results_is_covered() -> None:
    named = {" ".join(path) for path, flag in COMMANDS if flag == "--json"}
    assert named >= {"accept", "audit", "bench", "capacity", "compare", "convert", "demo", "doctor", "experiment",
                     "guard", "guard restart", "hw", "plan", "sync"}  # fmt: skip
    assert {" ".join(path) for path, flag in COMMANDS if flag == "--out"} >= {
        "accept", "bench", "capacity", "compare", "demo", "doctor", "experiment", "hw", "sync"}  # fmt: skip


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A file, a folder holding a run, a character device, a symlink and (as root) a read-only mount."""
    root = tmp_path_factory.mktemp("places")
    (root / "afile").write_text("keep me\n")
    (root / "done").mkdir()
    (root / "done" / "run.json").write_text("{}")
    (root / "ro").mkdir()
    os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    made = {"file": root / "afile", "run": root / "done", "device": root / "null", "dir": root}
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(root / "ro")],
                             capture_output=True).returncode == 0  # fmt: skip
    if mounted:
        made["ro"] = root / "ro"
    yield made
    if mounted:
        subprocess.run(["umount", str(root / "ro")], check=True)


def bad_values(flag: str, places: dict[str, Path], fresh: bool) -> list[tuple[str, str]]:
    """(value, what the message says) for ``flag``."""
    ro = [(str(places["ro"] / "x"), "not writable")] if "ro" in places else []
    if flag == "--out":
        held = [(str(places["run"]), "already holds a run")] if fresh else []
        return [(str(places["file"]), "is a file, not a folder"), (str(places["device"]), "character device"),
                ("", "empty path"), *held, *ro]  # fmt: skip
    return [(str(places["dir"]), "is a folder"), (".", "is a folder"), ("", "empty path"),
            (str(places["device"]), "character device"), *ro]  # fmt: skip


@pytest.mark.parametrize(("path", "flag"), COMMANDS, ids=[f"{' '.join(p)} {f}" for p, f in COMMANDS])
def test_a_bad_output_path_is_exit_2_before_anything_else(
    places: dict[str, Path], path: tuple[str, ...], flag: str
) -> None:
    fresh = path not in (("experiment",), ("trial",))  # --resume continues a folder that holds a run
    for value, says in bad_values(flag, places, fresh):
        result = invoke([*path, flag, value])  # nothing else given: the path is what is refused
        assert result.code == 2 and flag in result.output and says in result.output, (value, result.output)
    assert (places["file"]).read_text() == "keep me\n"
    assert stat.S_ISCHR(os.lstat(places["device"]).st_mode)


server = synthetic_server(itl_s=0.001, ttft_s=0.002)


def bench(srv: ThreadedServer, *more: str) -> list[str]:
    return ["bench", "--url", srv.url, "--workload", "random", "--input-len", "8", "--output-len", "4",
            "--requests", "3", "--warmup", "0", *more]  # fmt: skip


def arrivals(srv: ThreadedServer) -> int:
    with urllib.request.urlopen(f"{srv.url}/arrivals", timeout=10) as resp:
        return len(json.loads(resp.read()))


def test_a_json_path_that_is_a_folder_costs_no_request(server: ThreadedServer, tmp_path: Path) -> None:
    sent = arrivals(server)
    assert invoke(bench(server, "--json", str(tmp_path / "b.json"))).code == 0
    assert arrivals(server) > sent  # the server counts what a run sends
    sent = arrivals(server)
    result = invoke(bench(server, "--json", str(tmp_path)))
    assert result.code == 2 and "--json" in result.output and "is a folder" in result.output, result.output
    assert arrivals(server) == sent  # refused before the run, not after it


def test_a_second_run_into_the_same_folder_is_refused(server: ThreadedServer, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(bench(server, "--out", str(out))).code == 0
    rows = (out / "requests.jsonl").read_text()
    summary = (out / "summary.json").read_text()
    again = invoke(bench(server, "--out", str(out)))
    assert again.code == 2 and "already holds a run" in again.output and "new folder" in again.output
    assert (out / "requests.jsonl").read_text() == rows and (out / "summary.json").read_text() == summary


def test_links_planted_in_a_run_folder_are_never_followed(server: ThreadedServer, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "run"
    out.mkdir()
    for name in ("requests.jsonl", "server_metrics.jsonl"):
        (out / name).symlink_to(victim)
    result = invoke(bench(server, "--out", str(out)))
    assert result.code == 2 and "already holds a run" in result.output, result.output
    assert victim.read_text() == "precious\n"


def test_the_run_folder_writer_refuses_a_planted_link_itself(tmp_path: Path) -> None:
    """Below the CLI's check: the folder is created empty, then a link appears where a record file goes."""
    from seatrial.errors import ConfigError
    from seatrial.runs.folder import RunFolder

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "server_metrics.jsonl").symlink_to(victim)
    with pytest.raises(ConfigError, match="already holds a run"):
        RunFolder(tmp_path / "run", "bench", {})
    assert victim.read_text() == "precious\n"


def test_report_never_writes_through_a_planted_link_or_over_a_device(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"levels": []}))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / "report.html").symlink_to(victim)
    result = invoke(["report", str(run)])
    assert result.code == 2 and "symlink" in result.output, result.output
    assert victim.read_text() == "precious\n" and (run / "report.html").is_symlink()
    (run / "report.html").unlink()
    os.mknod(run / "report.html", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    result = invoke(["report", str(run)])
    assert result.code == 2 and "character device" in result.output, result.output
    assert stat.S_ISCHR(os.lstat(run / "report.html").st_mode)


def test_json_over_a_device_leaves_the_device(tmp_path: Path) -> None:
    """``--json /dev/full`` made the device a regular file (the atomic rename); a device of our own here."""
    from seatrial.errors import ConfigError
    from seatrial.jsonio import write_json

    device = tmp_path / "full"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    with pytest.raises(ConfigError, match="character device"):
        write_json(device, {"a": 1})
    assert stat.S_ISCHR(os.lstat(device).st_mode)
