#!/usr/bin/env bash
# Packs the llama.cpp source that scripts/setup_llamacpp.sh fetched (llama-cpp-python's vendored tree) into
# a stripped tarball for a GPU host without a package registry, small enough to carry (a device call carries
# 64 MiB): no models/ but one real tokenizer (ggml-vocab-llama-bpe.gguf), no docs/, tests/, examples/,
# benches/, pocs/, no web UI sources (the server is built without its UI), and of ggml's backends only CPU and
# CUDA. Writes .llamacpp-src/llama.cpp-src.tar.gz (ignored by git; name the folder in a device call's carry);
# evidence/h200-llamacpp/device_run.sh builds llama-server with CUDA from it.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${SEATRIAL_LLAMACPP_DIR:-$HOME/.cache/seatrial/llama.cpp}
SRC="$DIR/src"
OUT=${1:-.llamacpp-src/llama.cpp-src.tar.gz}
[ -f "$SRC/CMakeLists.txt" ] || { echo "no llama.cpp source at $SRC: run scripts/setup_llamacpp.sh first" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
drop=(docs tests examples benches pocs media .github tools/server/tests tools/server/bench
      tools/server/public tools/server/webui)
excludes=()
for d in "${drop[@]}"; do excludes+=(--exclude="./$d"); done
for b in "$SRC"/ggml/src/ggml-*/; do
  name=$(basename "$b")
  case "$name" in ggml-cpu | ggml-cuda) ;; *) excludes+=(--exclude="./ggml/src/$name") ;; esac
done
# the web UI: only what its CMake reads when it neither builds nor downloads the UI
for f in "$SRC"/tools/ui/* "$SRC"/tools/ui/.[!.]*; do
  [ -e "$f" ] || continue
  case "$(basename "$f")" in CMakeLists.txt | ui.cpp.in | ui.h.in | sources.cmake) ;; *) excludes+=(--exclude="./tools/ui/$(basename "$f")") ;; esac
done
for f in "$SRC"/models/*; do
  [ "$(basename "$f")" = ggml-vocab-llama-bpe.gguf ] || excludes+=(--exclude="./models/$(basename "$f")")
done
tar -C "$SRC" "${excludes[@]}" -czf "$OUT" .
echo "$OUT: $(du -h "$OUT" | cut -f1)"
