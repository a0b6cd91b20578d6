from typer.testing import CliRunner

from seatrial import __version__
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


def test_an_unexpected_exception_is_one_line_and_exit_70(tmp_path) -> None:
    """No traceback reaches the user, and 1 stays "a failed verdict" (issue 16 item 4)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.argv = ['seatrial', 'version'];"
        "import seatrial.cli.app as a; import typer;"
        "typer.echo = lambda *args, **kw: (_ for _ in ()).throw(RuntimeError('boom'));"
        "a.main()"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 70 and "internal error: RuntimeError: boom" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_exit_codes_reach_the_shell(tmp_path) -> None:
    """typer.Exit(1) from a command (an invalid bench level here) must be the process's exit status."""
    import subprocess
    import sys

    from seatrial.testing.server import SyntheticConfig, ThreadedServer

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
