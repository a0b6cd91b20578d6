"""A guard setting is written once (issue 44 item 1): ``seatrial guard``'s options are generated from
:class:`GuardFlags`, whose defaults are the watchdog's own (:class:`GuardConfig`), and a ``serve.guard:``
block takes the same names and hands them to the command as its flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import ConfigError
from seatrial.guard.config import GuardConfig, GuardFlags, HealthConfig, duration_text
from seatrial.server.serve import GuardSettings


def test_the_flags_defaults_are_the_watchdogs(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    assert GuardFlags().config(history) == GuardConfig(history=history)
    probed = GuardFlags(health_url="http://127.0.0.1:9/health").config(history)
    assert probed.health == HealthConfig(url="http://127.0.0.1:9/health")  # type: ignore[arg-type]


@pytest.mark.parametrize(("seconds", "text"), [(21600, "6h"), (600, "10m"), (5, "5s"), (90, "90s"), (0.5, "0.5s"),
                                               (86400, "1d"), (60, "1m")])  # fmt: skip
def test_a_duration_is_written_in_its_largest_whole_unit(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text and GuardFlags(stop_grace=text).seconds("stop_grace") == seconds


def test_a_serve_block_reaches_the_command_as_the_same_settings(tmp_path: Path) -> None:
    """The flags a serve block hands ``seatrial guard`` give back its own settings (restart budget 0 there:
    the experiment retries a crashed start itself), and only what differs from the command's defaults."""
    block = GuardSettings(min_available_gib=0.25, stop_grace="10s", health_url="http://127.0.0.1:9/h")
    argv = block.flags()
    assert argv == ["--min-available-gib", "0.25", "--restart-budget", "0", "--health-url", "http://127.0.0.1:9/h",
                    "--stop-grace", "10s"]  # fmt: skip
    given = {argv[i][2:].replace("-", "_"): argv[i + 1] for i in range(0, len(argv), 2)}
    assert GuardFlags.model_validate(given).config(tmp_path) == block.config(tmp_path)


def test_a_bad_duration_is_named_by_its_setting() -> None:
    with pytest.raises(ValueError, match="'soon' is not a duration"):
        GuardFlags(backoff="soon")
    with pytest.raises(ConfigError):
        GuardFlags.model_construct(backoff="soon").seconds("backoff")


def test_a_window_or_a_timeout_of_zero_is_refused_where_it_is_written() -> None:
    """A serve block with a zero window would have every guarded start exit 2 at launch: refused as the plan
    is read; on the command line, named by its flag."""
    from tests.clirun import invoke

    with pytest.raises(ValueError, match="'0s' is no time at all"):
        GuardSettings(restart_window="0s")
    assert GuardFlags(backoff="0", stop_grace="0s").seconds("backoff") == 0  # no backoff, no grace: allowed
    result = invoke(["guard", "--recovery-timeout", "0", "--", "true"])
    assert result.code == 2 and "--recovery-timeout: '0' is no time at all" in result.output, result.output
