#!/usr/bin/env bash
# The device call behind evidence/h200-capacity/capacity_accuracy_2.txt (issue 23): benchmarks/capacity_accuracy.py
# on the lent H200's 16 CPU cores (no GPU used), 20 searches over 8 synthetic servers of one law. Run from the
# repository root on that machine with the wheels of pydantic, pydantic-core, annotated-types,
# typing-inspection, typing-extensions, orjson, typer, rich, click, shellingham, markdown-it-py, mdurl and
# pygments carried in .whl/ (the image has numpy, scipy, aiohttp, jinja2; not these).
set -uo pipefail
export COLUMNS=200 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$OUT/capacity_accuracy_2.txt"; exit 3; }
{
  date -u; nproc
  PYTHONPATH=/tmp/site:$PWD/src:$PWD timeout 540 python3 benchmarks/capacity_accuracy.py --searches 20 --parallel 8
  echo "exit code $?"
} 2>&1 | tee "$OUT/capacity_accuracy_2.txt"
