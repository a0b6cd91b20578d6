"""A stand-in for the docker CLI in the guard's container tests, driving a real ``sleep`` process as
the container's init. State lives in $FAKE_DOCKER_DIR: ``pid``, ``exitcode``, ``id`` (the container's
ID; a test that writes a new one has recreated the container under the same name), ``extra_pids``
(more pids ``docker top`` lists) and ``argv.log`` (one JSON argv per call). Only the container named
``srv`` exists, reachable by that name or by its current ID."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

STATE = Path(os.environ["FAKE_DOCKER_DIR"])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def main(argv: list[str]) -> int:
    with (STATE / "argv.log").open("a") as log:
        log.write(json.dumps(argv) + "\n")
    verb, name = argv[0], argv[-1] if argv[0] != "top" else argv[1]
    id_file = STATE / "id"
    container_id = id_file.read_text().strip() if id_file.exists() else "a1b2c3d4e5f6" * 4
    if name not in ("srv", container_id):
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        return 1
    pid_file = STATE / "pid"
    pid = int(pid_file.read_text()) if pid_file.exists() else 0
    running = pid > 0 and alive(pid)
    if verb == "inspect":
        fmt = argv[2]
        exit_file = STATE / "exitcode"
        values = {
            "{{.State.Running}}": str(running).lower(),
            "{{.State.Pid}}": str(pid if running else 0),
            "{{.State.ExitCode}}": exit_file.read_text() if exit_file.exists() else "0",
            "{{.Id}}": container_id,
        }
        for key, value in values.items():
            fmt = fmt.replace(key, value)
        print(fmt)
    elif verb == "top":
        extra = (STATE / "extra_pids").read_text().split() if (STATE / "extra_pids").exists() else []
        print("\n".join(["PID", str(pid), *extra]))
    elif verb in ("kill", "stop"):
        os.kill(pid, signal.SIGKILL if verb == "kill" else signal.SIGTERM)
        (STATE / "exitcode").write_text("137" if verb == "kill" else "143")
    elif verb == "start":
        quiet = subprocess.DEVNULL  # never hold the caller's capture pipes open
        child = subprocess.Popen(
            ["sleep", "300"], start_new_session=True, stdin=quiet, stdout=quiet, stderr=quiet
        )
        pid_file.write_text(str(child.pid))
        (STATE / "exitcode").write_text("0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
