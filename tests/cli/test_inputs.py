"""Issue 42 items 12, 14, 15: a user's nonsense is exit 2 with one line, before any work: NaN and infinity
in any float flag of any command (found from the CLI itself, so a new flag is covered too), SLO bounds,
contradictory flags, an empty --trials, an API key variable that is unset or holds a line break, a health
URL that is none, a path that is not there, a plan that is binary or nested without end; ``--json -`` keeps
stdout one JSON document."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer.main
from tests.clirun import invoke
from tests.servers import synthetic_server
from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.testing.server import ThreadedServer


def _float_flags() -> list[tuple[tuple[str, ...], str]]:
    root: Any = typer.main.get_command(app)
    ctx = type(root).context_class(root)
    found = []
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        subs = [((name,), command)]
        if hasattr(command, "list_commands"):
            subs += [((name, s), command.get_command(ctx, s)) for s in command.list_commands(ctx)]
        for path, cmd in subs:
            for p in cmd.params:
                if any(c.__name__ == "FloatParamType" for c in type(p.type).__mro__) and p.opts[0].startswith("--"):
                    found.append((path, p.opts[0]))
    return found


FLOAT_FLAGS = _float_flags()


def test_the_float_flags_are_found() -> None:
    named = {(" ".join(path), flag) for path, flag in FLOAT_FLAGS}
    assert {("bench", "--rate"), ("capacity", "--attainment"), ("plan", "--gpu-memory-gib"),
            ("compare", "--threshold-pct"), ("guard", "--min-available-gib"), ("hw", "--duration")} <= named  # fmt: skip
    assert len(named) >= 40


@pytest.mark.parametrize(("path", "flag"), FLOAT_FLAGS, ids=[f"{' '.join(p)} {f}" for p, f in FLOAT_FLAGS])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_every_float_flag_refuses_nan_and_infinity(path: tuple[str, ...], flag: str, value: str) -> None:
    result = CliRunner().invoke(app, [*path, flag, value])
    assert result.exit_code == 2 and f"'{value}' is not a finite number" in result.output, result.output


server = synthetic_server(itl_s=0.001, ttft_s=0.002)


def _arrivals(server: ThreadedServer) -> dict[str, int]:
    with urllib.request.urlopen(f"{server.url}/arrivals", timeout=10) as resp:
        return dict(json.loads(resp.read()))


def _bench(server: ThreadedServer, *extra: str) -> list[str]:
    return ["bench", "--url", server.url, "--requests", "3", "--input-len", "8", "--output-len", "4",
            "--warmup", "0", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--slo", "ttft_ms:nan"], "ttft_ms: the bound must be a positive, finite number of milliseconds, got 'nan'"),
        (["--slo", "tpot_ms:inf"], "tpot_ms: the bound must be a positive, finite number"),
        (["--goodput", "ttft_ms:5000,ttft_ms:1"], "ttft_ms is bounded twice (5000 and 1)"),
        (["--slo", "ttft_ms:1", "--goodput", "ttft_ms:2"], "give --slo or --goodput, not both"),
        (["--rate", "5", "--concurrency", "2"], "--concurrency sets closed-loop levels, --rate/--ramp-up an open loop"),
        (["--api-key-env", "SEATRIAL_TEST_UNSET_KEY"], "$SEATRIAL_TEST_UNSET_KEY is not set in the environment"),
        (["--api-key-env", "SEATRIAL_TEST_CRLF_KEY"], "$SEATRIAL_TEST_CRLF_KEY holds a control character"),
    ],
)
def test_bench_refuses_before_any_request(
    server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], needle: str
) -> None:
    monkeypatch.delenv("SEATRIAL_TEST_UNSET_KEY", raising=False)
    monkeypatch.setenv("SEATRIAL_TEST_CRLF_KEY", "sk-secret\r\nX-Injected: 1")
    before = _arrivals(server)
    result = invoke(_bench(server, "--out", str(tmp_path / "run"), *extra))
    assert result.code == 2 and needle in result.output, result.output
    assert "sk-secret" not in result.output and not (tmp_path / "run").exists()
    assert _arrivals(server) == before  # no request went out


def test_bench_takes_the_slo_by_capacity_s_spelling_and_its_old_one_with_a_notice(
    server: ThreadedServer, tmp_path: Path
) -> None:
    """One spelling of an SLO in every command (issue 44 item 2): ``--slo``; ``--goodput`` still works."""
    for flag in ("--slo", "--goodput"):
        result = invoke(_bench(server, flag, "ttft_ms:5000",
                               "--out", str(tmp_path / flag), "--json", str(tmp_path / f"{flag}.json")))  # fmt: skip
        assert result.code == 0, result.output
        assert ("--goodput is spelled --slo now" in result.output) is (flag == "--goodput"), result.output
        level = json.loads((tmp_path / f"{flag}.json").read_text())["levels"][0]
        assert level["goodput"]["slo"] == {"ttft_ms": 5000.0}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["capacity", "--slo", "ttft_ms:nan"], "the bound must be a positive, finite number"),
        (["capacity", "--slo", "e2e_ms:100,e2e_ms:200"], "e2e_ms is bounded twice"),
        (["accept", "--trials", ""], "--trials names no trial"),
        (["accept", "--trials", " , "], "--trials names no trial"),
        (["accept", "--api-key-env", "SEATRIAL_TEST_UNSET_KEY"], "$SEATRIAL_TEST_UNSET_KEY is not set"),
    ],
)
def test_capacity_and_accept_refuse_before_any_request(
    server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], needle: str
) -> None:
    monkeypatch.delenv("SEATRIAL_TEST_UNSET_KEY", raising=False)
    result = invoke([*args, "--url", server.url, "--out", str(tmp_path / "run")])
    assert result.code == 2 and needle in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_json_to_stdout_is_one_document_and_the_tables_go_to_stderr(server: ThreadedServer) -> None:
    result = CliRunner().invoke(app, _bench(server, "--json", "-"))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # nothing but the JSON
    assert summary["levels"][0]["requests_ok"] == 3
    assert "TTFT p50" in result.stderr  # the levels table, where a pipe does not read it
    again = CliRunner().invoke(app, _bench(server))  # the next command line prints its tables to stdout again
    assert "TTFT p50" in again.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "/nonexistent-seatrial"], "does not exist"),
        (["plan", "/nonexistent-seatrial"], "does not exist"),
        (["convert", "/nonexistent-seatrial", "/tmp/seatrial-never"], "does not exist"),
        (["sync", "/nonexistent-seatrial", "/tmp/seatrial-never"], "does not exist"),
        (["experiment", "/nonexistent-seatrial.yaml"], "does not exist"),
        (["guard", "--health-url", "notaurl", "--", "true"], "--health-url: Input should be a valid URL"),
    ],
)
def test_paths_that_are_not_there_and_a_url_that_is_none(args: list[str], needle: str) -> None:
    result = invoke(args)
    assert result.code == 2 and needle in result.output, result.output


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (bytes(range(128, 256)), "cannot be read as UTF-8 text"),
        (("a: " + "[" * 5000 + "]" * 5000).encode(), "nested deeper than"),
        ("\n".join("  " * i + "k:" for i in range(80)).encode() + b" 1\n", "nested deeper than 64 levels"),
        (b"- a\n- b\n", "expected a mapping at the top level"),
    ],
)
def test_an_experiment_plan_that_is_binary_or_nested_without_end(tmp_path: Path, content: bytes, needle: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(content)
    result = invoke(["experiment", str(plan), "--out", str(tmp_path / "run")])
    assert result.code == 2 and needle in result.output, result.output


def test_no_capacity_says_whether_the_lowest_probe_missed_or_was_inconclusive() -> None:
    from seatrial.cli.capacity import _why_none

    def probe(load: float, verdict: str) -> SimpleNamespace:
        return SimpleNamespace(load=load, verdict=verdict)

    missed = _why_none([probe(4, "MISSES"), probe(2, "MISSES")])
    assert missed == "even the lowest probe (2) does not meet the SLO"
    unknown = _why_none([probe(4, "MISSES"), probe(2, "INCONCLUSIVE")])
    assert "lowest probe (2) was INCONCLUSIVE" in unknown and "does not meet" not in unknown
