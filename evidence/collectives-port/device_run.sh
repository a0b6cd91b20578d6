#!/usr/bin/env bash
# Issue 42 item 22 on 2 GPUs (nvidia-h100-x2): hw collectives' rendezvous store is now served by the parent on a
# port it holds (seatrial.hw.collectives.rendezvous_store) and the workers join it as clients; this checks the
# NCCL path through it (all-reduce and all-gather, 1 MiB and 16 MiB, correct results) three times in a row, with a
# neighbour trying to bind the rendezvous port each time. Needs only torch (the image's) and the standard library:
# seatrial.hw.collectives imports nothing else. Run from the repository root: bash evidence/collectives-port/device_run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
{
  date -u; nvidia-smi -L
  PYTHONPATH=$PWD/src timeout 400 python3 - <<'PY'
import errno, socket
from seatrial.hw import collectives

real = collectives.rendezvous_store
def raced():
    store = real()
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", store.port)); print("NOT HELD: a neighbour bound", store.port)
        except OSError as e:
            print("rendezvous port", store.port, "held:", errno.errorcode[e.errno])
    return store
collectives.rendezvous_store = raced
for run in range(3):
    rows = collectives.run_collectives(2, "nccl", [1 << 20, 1 << 24], [0, 1])
    print(run, [(r["op"], r["size_bytes"], r["busbw_gbps"], r["correct"]) for r in rows])
PY
  echo "exit code $?"
} 2>&1 | tee "${OUT:-.}/collectives_port.txt"
