"""Memory hog for the guard tests: allocates and touches memory in steps, logging each step.

Usage: hog.py LOG STEP_MIB MAX_MIB PAUSE_S HOLD_S
The first log line is {"pid", "pgid", "ppid"}; each step appends {"t", "avail_bytes", "held_mib"}
(the wall time right after the step's pages were touched, and MemAvailable read then). After MAX_MIB
it holds the memory for HOLD_S seconds and exits 0.
"""

import json
import os
import sys
import time

PAGE = 4096


def mem_available_bytes() -> int:
    with open("/proc/meminfo", "rb") as fh:
        for line in fh:
            if line.startswith(b"MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable")


def main() -> None:
    log_path, step_mib, max_mib, pause_s, hold_s = sys.argv[1:6]
    step = int(step_mib) << 20
    blocks = []
    with open(log_path, "a") as log:
        log.write(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "ppid": os.getppid()}) + "\n")
        log.flush()
        while len(blocks) * int(step_mib) < int(max_mib):
            block = bytearray(step)
            block[::PAGE] = b"\x01" * (step // PAGE)  # touch every page so it is really resident
            blocks.append(block)
            record = {
                "t": time.time(),
                "avail_bytes": mem_available_bytes(),
                "held_mib": len(blocks) * int(step_mib),
            }
            log.write(json.dumps(record) + "\n")
            log.flush()
            time.sleep(float(pause_s))
    time.sleep(float(hold_s))


if __name__ == "__main__":
    main()
