#!/usr/bin/env bash
# `seatrial trial PLAN.yaml` end to end on a lent GPU against llama.cpp's llama-server (CUDA, sm_90, built
# without ggml's FlashAttention CUDA kernels), serving the random-F16 Llama-3.2-1B-shaped GGUF with the real
# llama-bpe tokenizer. Two calls on one warm machine:
#   bash evidence/h100-trial/device_run.sh build   carry .whl .llamacpp-src: wheels, llama-server + GGUF into the
#                                                   ignored .llamacpp-build/ (kept by a warm machine); the binary
#                                                   also comes back as $OUT/llama-server.xz.part-* (< 16 MiB each)
#   bash evidence/h100-trial/device_run.sh all     both in one call (a machine start saved): the trial gets what is
#                                                   left of CALL_S (590 s) after the build
#   TRIAL_S=420 bash evidence/h100-trial/device_run.sh trial   carry .whl (+ .llamacpp-src for a fresh machine):
#                                                   writes the plan sized to TRIAL_S seconds, runs the trial
# Plan overrides (env): TRIAL_S, PRE, STARTS, BUDGET_MAX (a start's budget at most, s), SLO_TTFT, SLO_TPOT, PEAK,
# ATTAIN, IN_LEN, OUT_LEN, CAP_START, CAP_MIN, CAP_MAX, CAP_PRECISION, CAP_PROBE, CAP_MAXREQ, CTX, SERVE_EXTRA (more serve
# args, YAML: ', "--cache-ram", "0"').
# The trial phase needs the binary: the warm machine's build, else the parts carried in evidence/h100-trial/.bin/
# (reassembled; the GGUF is then made again from .llamacpp-src); with neither it stops at once (exit 4).
# The commands are those of evidence/h200-llamacpp/device_run.sh (copied, not sourced).
set -uo pipefail
PHASE=${1:?phase: build or trial}
T0=$(date +%s)
export COLUMNS=200 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/h100-trial; mkdir -p "$W"
B=$PWD/.llamacpp-build; L=$B/src; BIN=$L/build/bin/llama-server; GGUF=$B/l1b.gguf
CARRIED=$PWD/evidence/h100-trial/.bin
PY=python3
if [ "$PHASE" = plan ]; then :
elif [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$OUT/setup.txt"; exit 3; }
  export PYTHONPATH=/tmp/site:$PWD/src:$PWD
else
  echo "no .whl carried: pydantic & co. from the image" ; export PYTHONPATH=$PWD/src:$PWD
fi
echo "wheels ready at +$(( $(date +%s) - T0 )) s"
if [ "$PHASE" != plan ]; then
  { date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1; nproc; uname -r; } > "$W/host-$PHASE.txt"
  cat "$W/host-$PHASE.txt"; cp "$W/host-$PHASE.txt" "$OUT/host.txt"
fi

make_gguf() {  # the GGUF (one core, about a minute)
  [ -s "$GGUF" ] && return 0
  [ -f "$L/models/ggml-vocab-llama-bpe.gguf" ] || { mkdir -p "$L"; tar -xzf .llamacpp-src/llama.cpp-src.tar.gz -C "$L" \
    ./models/ggml-vocab-llama-bpe.gguf ./gguf-py || { echo "no .llamacpp-src carried: cannot make the GGUF"; return 1; }; }
  local s=$(date +%s)
  PYTHONPATH=$L/gguf-py:$PYTHONPATH timeout 240 $PY src/seatrial/server/llamagguf.py "$GGUF.part" --shape llama-3.2-1b \
    --vocab "$L/models/ggml-vocab-llama-bpe.gguf" > "$W/gguf.txt" 2>&1 && mv "$GGUF.part" "$GGUF"
  local rc=$?; echo "gguf rc $rc in $(( $(date +%s) - s )) s" >> "$W/gguf.txt"; ls -la "$GGUF" >> "$W/gguf.txt" 2>&1
  return $rc
}

phase_build() {
  mkdir -p "$B"
  if [ -x "$BIN" ]; then echo "llama-server already built (kept from an earlier call)" | tee "$W/build_time.txt"
  else
    [ -f "$L/CMakeLists.txt" ] || { mkdir -p "$L" && tar -xzf .llamacpp-src/llama.cpp-src.tar.gz -C "$L"; } \
      || { echo "no .llamacpp-src carried"; exit 3; }
    make_gguf & GPID=$!
    local s=$(date +%s)
    ( cd "$L" && timeout 90 cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$W/cmake.log" 2>&1 \
      && echo "configured in $(( $(date +%s) - s )) s" \
      && timeout 420 cmake --build build --target llama-server -j 16 >"$W/build.log" 2>&1 )
    local rc=$?
    echo "build rc $rc in $(( $(date +%s) - s )) s (GGML_CUDA_FA=OFF)" | tee "$W/build_time.txt"
    tail -c 4000 "$W/build.log" > "$W/build_tail.txt" 2>/dev/null
    wait $GPID; echo "gguf: $(tail -2 "$W/gguf.txt" | tr '\n' ' ')" | tee -a "$W/build_time.txt"
    (( rc == 0 )) || { tail -20 "$W/build.log"; exit 5; }
  fi
  make_gguf || { cat "$W/gguf.txt"; exit 5; }
  ls -la "$BIN" "$GGUF" | tee -a "$W/build_time.txt"
  local s=$(date +%s)  # the binary back as parts under 16 MiB: a fresh machine's trial call carries them
  [ "$PHASE" = build ] && xz -T16 -6 -c "$BIN" | split -b 15M -d - "$OUT/llama-server.xz.part-"
  echo "xz+split in $(( $(date +%s) - s )) s: $(ls -la "$OUT"/llama-server.xz.part-* | awk '{print $5}' | tr '\n' ' ')" | tee -a "$W/build_time.txt"
  tar -czf "$OUT/build.tgz" -C "$W" build_time.txt build_tail.txt cmake.log gguf.txt "host-$PHASE.txt" 2>/dev/null
  echo "build phase done in $(( $(date +%s) - T0 )) s"
}

write_plan() {  # the plan, sized to TRIAL_S seconds (PRE: the stages before capacity; 2 candidates)
  local T=${TRIAL_S:-420} PRE=${PRE:-80} CAND=2
  local left=$(( T - PRE - 25 )) starts=${STARTS:-} budget
  if [ -z "$starts" ]; then starts=2; (( left / (CAND * 2) - 10 < 45 )) && starts=1; fi
  budget=$(( left / (CAND * starts) - 10 )); (( budget > ${BUDGET_MAX:-90} )) && budget=${BUDGET_MAX:-90}; (( budget < 20 )) && budget=20
  echo "trial: ${T} s, capacity: $starts start(s) a candidate, ${budget} s a start"
  cat > "$W/plan.yaml" <<YAML
# seatrial trial on a lent GPU: llama-server (CUDA, FA off) with a random-F16 Llama-3.2-1B-shaped GGUF
deployment:
  checkpoint: $GGUF
  nodes: local
  gpus_per_node: 1
  gpu_hour_usd: 3.5            # an assumed price of one H200 hour, not a quote
  hardware: h200
serve:
  command: [$BIN, --model, "{model}", --alias, l1b, -ngl, "99", -c, "${CTX:-131072}", --metrics, --host, 127.0.0.1, --port, "{port}"${SERVE_EXTRA:-}]
  ready_timeout_s: 120
  stop_grace_s: 45             # more than the guard's own 30 s
  guard: {min_available_gib: 4}
candidates:
  - {name: par-16, args: [--parallel, "16"]}
  - {name: par-64, args: [--parallel, "64"]}
profiles:
  - name: chat
    slo: {ttft_ms: ${SLO_TTFT:-2000}, tpot_ms: ${SLO_TPOT:-50}}
    attainment: ${ATTAIN:-0.9}
    workload: {model: l1b, workload: random, input_len: ${IN_LEN:-1024}, output_len: ${OUT_LEN:-128}, ignore_eos: true, warmup: 4}
    peak_req_s: ${PEAK:-100}
stages:
  hardware: {duration_s: 5}
  io: {trials: [storage.read, storage.write], repeats: 3, runtime_s: 2, size_mib: 256, jobs: 4}
  serving: {scale: small, trials: [basic]}
  capacity: {starts: $starts, start: ${CAP_START:-2}, min_rate: ${CAP_MIN:-0.5}, max_rate: ${CAP_MAX:-8}, precision: ${CAP_PRECISION:-0.3},
             probe_requests: ${CAP_PROBE:-40}, max_probe_requests: ${CAP_MAXREQ:-160}, time_budget: ${budget}s}
YAML
}

phase_trial() {
  if [ ! -x "$BIN" ]; then
    if ls "$CARRIED"/llama-server.xz.part-* >/dev/null 2>&1; then
      mkdir -p "$(dirname "$BIN")"; cat "$CARRIED"/llama-server.xz.part-* | xz -dc > "$BIN" && chmod +x "$BIN" \
        && echo "llama-server from the carried parts (a fresh machine: no warm build)" | tee "$W/bin.txt"
    fi
  fi
  [ -x "$BIN" ] || { echo "FATAL: $BIN is absent (a fresh machine: run the build phase first, or carry the parts" \
    "in evidence/h100-trial/.bin/)" | tee "$OUT/trial.txt"; exit 4; }
  make_gguf || { echo "FATAL: no GGUF at $GGUF and it could not be made"; cat "$W/gguf.txt"; exit 4; }
  echo "binary and GGUF ready at +$(( $(date +%s) - T0 )) s"
  write_plan
  cp "$W/plan.yaml" "$OUT/plan.yaml"
  local s=$(date +%s) R=$W/run T=${TRIAL_S:-420}; rm -rf "$R" "$W/trial.json"
  timeout -s INT -k 30 "$T" $PY -m seatrial.cli.app trial "$W/plan.yaml" --out "$R" --json "$W/trial.json" 2>&1 | tee "$W/trial.txt"
  local rc=${PIPESTATUS[0]}
  echo "trial exit $rc in $(( $(date +%s) - s )) s (limit $T s)" | tee -a "$W/trial.txt"
  # pack: requests gzipped, the io scratch and big files out (a big server log keeps its tail)
  rm -rf "$R/2-io/scratch"
  find "$R" -name requests.jsonl -exec gzip -f {} + 2>/dev/null
  find "$R" -type f -size +3M -print0 | while IFS= read -r -d '' f; do
    echo "dropped $(stat -c %s "$f") B: ${f#$W/}" >> "$W/dropped.txt"
    case "$f" in *.log|*.txt) tail -c 200000 "$f" > "$f.tail";; esac; rm -f "$f"; done
  tar -czf "$OUT/trial.tgz" -C "$W" run plan.yaml trial.txt $( [ -f "$W/dropped.txt" ] && echo dropped.txt ) 2>/dev/null
  cp "$W/trial.txt" "$OUT/trial.txt"; [ -f "$W/trial.json" ] && cp "$W/trial.json" "$OUT/trial.json"
  [ -f "$R/summary.json" ] && cp "$R/summary.json" "$OUT/summary.json"
  ls -la "$OUT"; echo "trial phase done in $(( $(date +%s) - T0 )) s"
  return $rc
}

case $PHASE in
  build) phase_build ;;
  trial) phase_trial ;;
  all) phase_build || exit $?  # one call: the build, then a trial sized to what is left of CALL_S (default 590 s)
       TRIAL_S=$(( ${CALL_S:-590} - ($(date +%s) - T0) - 15 )); echo "trial gets ${TRIAL_S} s"; phase_trial ;;
  plan) write_plan; cat "$W/plan.yaml" ;;  # the plan alone (a dry look; no checks, no wheels)
  *) echo "phase: build or trial"; exit 2 ;;
esac
