#!/usr/bin/env bash
# Issue 43, for a session lent `nvidia-h200-x8` (or `nvidia-h200-x4`: the same script, stated as 4 GPUs):
# seed 004's Stage 1 on every GPU of one host in one device call, from the repository root, with the wheels
# `seatrial hw`'s CLI needs and the image lacks (pydantic, pydantic-core, annotated-types, typing-inspection,
# typing-extensions, orjson, typer, rich, click, shellingham, markdown-it-py, mdurl, pygments; cp312,
# manylinux x86_64) carried in .whl/ (run's carry: [".whl"]).
#
#   bash evidence/h200x8/device_run.sh all   # every GPU at once: inventory (topology), health, precision
#                                            # BF16/FP8/FP4, burn 60 s with telemetry, collectives on 2, 4, 8
#                                            # ranks (1 MiB-4 GiB), the fleet rule across the GPUs (~6 min)
#   bash evidence/h200x8/device_run.sh one   # the same trials on GPU 0 alone: the wall time of one GPU,
#                                            # beside which `all` states its own (~5 min; a second call)
#
# Everything goes to $OUT: machine.txt, topo.txt, nvlink_status.txt, hw_<tag>.json (the sheet),
# hw_<tag>_table.txt (what it printed, exit code, wall time), run_<tag>/ (the run folder) and
# closing_note_<tag>.txt (busbw per group size, each GPU's TFLOP/s beside the median, each trial's wall).
set -uo pipefail
MODE=${1:-all}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # multicast stays off
export COLUMNS=220 PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install from .whl/ failed (carry .whl)" | tee "$OUT/machine.txt"; exit 3; }
python3 -c "import pydantic, typer, rich, orjson, seatrial.cli.app" 2>"$OUT/import_error.txt" \
    || { echo "seatrial's CLI does not import: see import_error.txt" | tee "$OUT/machine.txt"; exit 3; }
rm -f "$OUT/import_error.txt"
N=$(nvidia-smi -L | grep -c '^GPU ')
case "$MODE" in
  all) GPUS=all; TAG=h200x$N ;;
  one) GPUS=0; TAG=h200x${N}_gpu0 ;;
  *) echo "usage: $0 all|one" >&2; exit 2 ;;
esac
{
  date -u
  nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,power.limit,pci.bus_id --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' | sort
  nproc; free -g | head -2
} > "$OUT/machine.txt" 2>&1
{ nvidia-smi topo -m; nvidia-smi -L; } > "$OUT/topo.txt" 2>&1
nvidia-smi nvlink --status > "$OUT/nvlink_status.txt" 2>&1
t0=$(date +%s.%N)
timeout 570 python3 -m seatrial.cli.app hw --gpus "$GPUS" --trials inventory,health,precision,burn,collectives \
    --duration 60 --expect-gpus "$N" --json "$OUT/hw_$TAG.json" --out "$OUT/run_$TAG" > "$OUT/hw_${TAG}_table.txt" 2>&1
rc=$?
echo "exit code $rc; wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s (GPUs: $GPUS of $N)" \
    >> "$OUT/hw_${TAG}_table.txt"
[ -s "$OUT/hw_$TAG.json" ] && python3 evidence/h200x8/closing_note.py "$OUT/hw_$TAG.json" > "$OUT/closing_note_$TAG.txt" 2>&1
tail -3 "$OUT/hw_${TAG}_table.txt"
exit $rc
