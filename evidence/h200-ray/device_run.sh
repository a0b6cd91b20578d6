#!/usr/bin/env bash
# The one device call behind evidence/h200-ray (run from the repository root on the lent H200 machine,
# with the wheels of Ray, orjson and pydantic carried in .whl/): a Ray head on 127.0.0.1 with the GPU,
# `seatrial hw --ray` against it, the listening sockets while Ray ran, Ray stopped, then the client
# benchmark on the machine's cores. Everything it prints goes to $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 COLUMNS=200
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 PYTHONPATH=$PWD/src:/tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 3
{
  date; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, ray; print('torch', torch.__version__, 'ray', ray.__version__)"
  python3 -m ray.scripts.scripts start --head --node-ip-address=127.0.0.1 --port=6380 --num-gpus=1 \
      --include-dashboard=false --disable-usage-stats --resources='{"seatrial_client": 8}' 2>&1
} > "$OUT/ray_cluster.txt"
python3 -m seatrial.cli.app hw --ray 127.0.0.1:6380 --nodes all --duration 30 --expect-gpus 1 \
    --json "$OUT/hw_ray_h200.json" --out "$OUT/run" > "$OUT/hw_ray_table.txt" 2>&1
echo "exit code $?" >> "$OUT/hw_ray_table.txt"
{ echo "listening TCP sockets while Ray ran (local address, state 0A):"
  awk '$4 == "0A" {print FILENAME, $2}' /proc/net/tcp /proc/net/tcp6
  python3 -m ray.scripts.scripts stop 2>&1; } >> "$OUT/ray_cluster.txt"
nproc > "$OUT/client_overhead_h200.txt"
python3 benchmarks/client_overhead.py --streams 1024,2048,4096 --workers 1,2,4,8 --reps 1 --no-vllm \
    >> "$OUT/client_overhead_h200.txt" 2>&1
