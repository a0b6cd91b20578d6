#!/usr/bin/env bash
# The one device call behind evidence/h200-sync (issue 21 item 19): benchmarks/sync_vs_rsync.py on the
# 16-core H200 host, where both ends of a loopback copy have cores enough to show what parallel streams
# gain. That host has no rsync or ssh and no orjson or pydantic: both are carried.
#
# Prepare, once, in the repository root (both folders git-ignored, so that only `carry` takes them):
#   echo /.whl/ >> .git/info/exclude; echo /ssh-bundle/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#       --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
#       orjson==3.13.0 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
#   bash ../shared/tools/ssh-bundle.sh ssh-bundle      # this machine's rsync, ssh, sshd and their libraries
# Run it with the device tool (kind nvidia-h200, about 4 minutes), from the repository root:
#   command: bash evidence/h200-sync/device_run.sh     carry: [".whl", "ssh-bundle"]
# What comes back in $OUT: sync_vs_rsync_h200.txt (the benchmark's output, then its exit code) and
# setup.txt (what was installed, the machine, free memory and disk). Commit both under evidence/h200-sync/.
#
# Knobs (for trying the script elsewhere): PYTHON (python3), SEATRIAL_WHEELS (.whl), SEATRIAL_SITE
# (/tmp/site), SYNC_BENCH_GB (4.295: 4 GiB), SYNC_BENCH_ROUNDS (3, the best of which is reported).
set -uo pipefail
: "${OUT:?set OUT to the folder to write into (the device tool sets it)}"
PY=${PYTHON:-python3}
WHEELS=${SEATRIAL_WHEELS:-.whl}
SITE=${SEATRIAL_SITE:-/tmp/site}
GB=${SYNC_BENCH_GB:-4.295}
ROUNDS=${SYNC_BENCH_ROUNDS:-3}
export COLUMNS=200 PYTHONUNBUFFERED=1

setup() {
  date -u
  [ -f benchmarks/sync_vs_rsync.py ] || { echo "run this from the repository root"; return 1; }
  ls "$WHEELS"/*.whl ssh-bundle/install.sh || { echo "carry $WHEELS and ssh-bundle (see this script's header)"; return 1; }
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl \
    || return 1
  bash ssh-bundle/install.sh || return 1
  export PATH=/usr/local/libexec/sshw:$PATH PYTHONPATH=$PWD/src:$PWD:$SITE
  "$PY" -c "import sys, pydantic, orjson, seatrial.cli.app; print('python', sys.version.split()[0], 'pydantic', pydantic.VERSION, 'orjson', orjson.__version__)" \
    || return 1
  for t in rsync ssh ssh-keygen sshd; do printf '%s: %s\n' "$t" "$(command -v $t)"; done
  echo "cores: $(nproc)"; free -g; df -h /var/tmp
}

if ! setup > "$OUT/setup.txt" 2>&1; then
  cat "$OUT/setup.txt"
  exit 3
fi
export PATH=/usr/local/libexec/sshw:$PATH PYTHONPATH=$PWD/src:$PWD:$SITE
"$PY" benchmarks/sync_vs_rsync.py --gb "$GB" --rounds "$ROUNDS" > "$OUT/sync_vs_rsync_h200.txt" 2>&1
echo "exit code $?" >> "$OUT/sync_vs_rsync_h200.txt"
cat "$OUT/setup.txt" "$OUT/sync_vs_rsync_h200.txt"
