"""Issue 42 item 3: an engine's own output, as seatrial writes it to ``server.log`` (experiment's starts,
every ``ServerProcess``), holds none of the secrets of its command line or environment: vLLM prints its
non-default args (``api_key`` among them) and a child may print its environment."""

from __future__ import annotations

import sys
from pathlib import Path

from seatrial.server.process import ServerProcess, free_port

KEY = "sk-child-KEY-31337"
TOKEN = "hf_child_TOKEN_2718"
# prints its arguments as vLLM prints its non-default args, and a variable of its environment, then exits 3
CHILD = "import os, sys; print('non-default args:', {'api_key': sys.argv[2]}); " \
        "print('env HF_TOKEN =', os.environ['HF_TOKEN'], flush=True); print('done'); sys.exit(3)"  # fmt: skip


def test_the_childs_log_is_written_line_by_line_without_its_secrets(tmp_path: Path) -> None:
    log = tmp_path / "start-1" / "server.log"
    server = ServerProcess([sys.executable, "-c", CHILD, "--api-key", KEY], log, port=free_port(),
                           env={"HF_TOKEN": TOKEN})  # fmt: skip
    server.proc.wait(60)
    server.stop(5)
    text = log.read_text()
    assert KEY not in text and TOKEN not in text, text
    assert text.splitlines() == [
        "non-default args: {'api_key': '<redacted>'}",
        "env HF_TOKEN = <redacted>",
        "done",
    ]


def test_a_child_that_dies_at_start_up_shows_its_last_words_redacted(tmp_path: Path) -> None:
    import pytest

    from seatrial.errors import EngineError

    server = ServerProcess([sys.executable, "-c", CHILD, "--api-key", KEY], tmp_path / "server.log",
                           port=free_port(), env={"HF_TOKEN": TOKEN})  # fmt: skip
    with pytest.raises(EngineError, match="exited with 3") as err:
        server.wait_ready(60)
    server.stop(5)
    assert "env HF_TOKEN = <redacted>" in str(err.value) and KEY not in str(err.value)
