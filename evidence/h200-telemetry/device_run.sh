#!/usr/bin/env bash
# The one device call behind evidence/h200-telemetry (issue 25): bench's GPU telemetry during load on the
# lent H200, checked against the GPU's energy counter. Run from the repository root on that machine, with the
# wheels of pydantic, pydantic-core, annotated-types, typing-inspection, typing-extensions and orjson carried
# in .whl/ (the image has torch, nvidia-ml-py, aiohttp; not these). Everything it prints goes to $OUT.
#
# benchmarks/gpu_energy_vs_counter.py runs `seatrial bench` (library) against the synthetic server at
# C=1,4,16, ~20 s a level, first with the GPU idle, then while a torch bf16 matmul loop loads it, and prints
# per level: samples, the rate achieved (10 Hz asked), mean power, the energy counter's delta, the integral of
# the sampled power over the same span, their ratio (target within 5%), J per output token; PASS or FAIL at the
# end (exit 0 / 1; 8 when no GPU could be read). Each level's run folder (report.html with the power plot)
# is copied to $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 COLUMNS=200 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$OUT/energy_vs_counter.txt"; exit 3; }
export PYTHONPATH=$PWD/src:/tmp/site
{
  date -u; git log -1 --format='commit %H' 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total --format=csv
  python3 -c "import torch, pynvml, pydantic; print('torch', torch.__version__, 'nvidia-ml-py', pynvml.__version__ if hasattr(pynvml, '__version__') else '?', 'pydantic', pydantic.__version__)"
  python3 benchmarks/gpu_energy_vs_counter.py --out /tmp/energy --levels 1,4,16 --level-s 20 --settle-s 15
  echo "exit code $?"
} 2>&1 | tee "$OUT/energy_vs_counter.txt"
# the summaries and the loaded C=16 report (its plot shows the power over the level); at most 8 files come back
for phase in idle matmul; do
  python3 - "$phase" <<'PY' > "$OUT/summaries_$phase.json" 2>/dev/null || true
import json, sys
from pathlib import Path
base = Path("/tmp/energy") / sys.argv[1]
print(json.dumps({d.name: json.loads((d / "summary.json").read_text()) for d in sorted(base.iterdir())}, indent=1))
PY
done
cp /tmp/energy/matmul/C16/report.html "$OUT/report_matmul_C16.html" 2>/dev/null || true
cp /tmp/energy/idle/C16/report.html "$OUT/report_idle_C16.html" 2>/dev/null || true
