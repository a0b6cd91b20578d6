from typer.testing import CliRunner

from seatrial import Verdict, __version__
from seatrial.cli.app import app
from seatrial.cli.common import parse_int_list
from seatrial.errors import ConfigError


def test_version_prints_package_version() -> None:
    result = CliRunner().invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == __version__


def test_parse_int_list_rejects_garbage() -> None:
    assert parse_int_list("1, 2,4", "--concurrency") == [1, 2, 4]
    try:
        parse_int_list("1,x", "--concurrency")
    except ConfigError as exc:
        assert "'x'" in str(exc)
    else:
        raise AssertionError("expected ConfigError")


def test_verdict_ok_words() -> None:
    assert Verdict.PASS.ok and Verdict.UNAVAILABLE.ok
    assert not Verdict.FAIL.ok and not Verdict.INCONCLUSIVE.ok


def test_exit_codes_reach_the_shell(tmp_path) -> None:
    """typer.Exit(1) from a command (an invalid bench level here) must be the process's exit status."""
    import subprocess
    import sys

    from seatrial.server.synthetic import SyntheticConfig, ThreadedServer

    with ThreadedServer(SyntheticConfig(fault="http500", fault_every=1, itl_s=0.001)) as srv:
        cmd = [
            sys.executable,
            "-m",
            "seatrial.cli.app",
            "bench",
            "--url",
            srv.url,
            "--workload",
            "random",
            "--input-len",
            "4",
            "--output-len",
            "2",
            "--requests",
            "2",
            "--warmup",
            "0",
        ]
        assert subprocess.run(cmd, capture_output=True).returncode == 1
        assert subprocess.run([*cmd, "--allow-invalid"], capture_output=True).returncode == 0
