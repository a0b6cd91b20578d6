#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (CPU) once, for the llama.cpp engine tests, from the source vendored in
# PyPI's llama-cpp-python sdist (the only package registry the CI host reaches). scripts/test.sh and .ci/run
# call it; the demo's setup (scripts/setup.sh) does not, so it stays within its ~3 minutes.
#   $SEATRIAL_LLAMACPP_DIR/llama-server   the binary (default ~/.cache/seatrial/llama.cpp)
#   $SEATRIAL_LLAMACPP_DIR/.seatrial-ready  written last: a build that stopped half-way is redone
#   $SEATRIAL_LLAMACPP_DIR/src/            the vendored source tree (kept for scripts/llamacpp_src.sh)
# Set SEATRIAL_SKIP_LLAMACPP=1 to skip it (the llama.cpp tests are then skipped with a message).
# On the 2-core host (shared with other jobs) the build took 1,106 s (2026-12-05).
set -euo pipefail
DIR=${SEATRIAL_LLAMACPP_DIR:-$HOME/.cache/seatrial/llama.cpp}
VERSION=${SEATRIAL_LLAMACPP_PY_VERSION:-0.3.36}
PY=${PYTHON:-python3}
die() { echo "[setup] llama.cpp: $*" >&2; exit 1; }

if [ "${SEATRIAL_SKIP_LLAMACPP:-0}" = "1" ]; then
  echo "[setup] SEATRIAL_SKIP_LLAMACPP=1: not building llama-server"
  exit 0
fi
if [ -f "$DIR/.seatrial-ready" ] && [ -x "$DIR/llama-server" ]; then
  echo "[setup] llama-server ready: $DIR/llama-server"
  exit 0
fi
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing ${missing[*]} (apt) for llama-server"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null 2>&1 \
      || die "could not install ${missing[*]}: install them, or set SEATRIAL_SKIP_LLAMACPP=1"
  else
    die "needs ${missing[*]} to build llama-server: install them, or set SEATRIAL_SKIP_LLAMACPP=1"
  fi
fi
mkdir -p "$DIR"
rm -f "$DIR/.seatrial-ready"
if [ ! -f "$DIR/src/CMakeLists.txt" ]; then
  echo "[setup] fetching llama-cpp-python ${VERSION} sdist (its vendored llama.cpp)"
  dl=$(mktemp -d)
  trap 'rm -rf "$dl"' EXIT
  "$PY" -m pip download -q --no-binary :all: --no-deps "llama-cpp-python==${VERSION}" -d "$dl" 2>&1 \
    | grep -v -e "is ignored: it is neither" -e "^$" || true
  sdist=$(ls "$dl"/llama_cpp_python-*.tar.gz 2>/dev/null | head -1)
  [ -n "$sdist" ] || die "pip could not download llama-cpp-python==${VERSION} (its sdist)"
  rm -rf "$DIR/src"
  tar -xzf "$sdist" -C "$dl"
  mv "$dl/llama_cpp_python-${VERSION}/vendor/llama.cpp" "$DIR/src" || die "no vendor/llama.cpp in the sdist"
fi
echo "[setup] building llama-server (CPU, $(nproc) cores; about 18 min on 2 cores)"
start=$(date +%s)
# LLAMA_BUILD_SERVER defaults to ON in a standalone build; it is named so that a changed default fails
# loudly. The web UI is neither built (npm) nor fetched (no network in CI): the server serves the API only.
cmake -S "$DIR/src" -B "$DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$DIR/cmake.log" 2>&1 \
  || die "cmake configure failed (log: $DIR/cmake.log)"
nice -n 10 cmake --build "$DIR/build" --target llama-server -j "$(nproc)" >"$DIR/build.log" 2>&1 \
  || die "building llama-server failed (log: $DIR/build.log)"
cp "$DIR/build/bin/llama-server" "$DIR/llama-server"
"$DIR/llama-server" --version >/dev/null 2>&1 || die "the built llama-server does not run (log: $DIR/build.log)"
echo "[setup] llama-server built in $(( $(date +%s) - start )) s: $DIR/llama-server"
touch "$DIR/.seatrial-ready"
