#!/usr/bin/env bash
# Issue 39 on the H200: llama-server with CUDA (sm_90) from the carried stripped source, a Llama-3.2-1B-shaped
# GGUF (random F16, the real tokenizer of models/ggml-vocab-llama-bpe.gguf), then seatrial hw, bench at
# C=1,16,64 with GPU telemetry and the server join, accept, capacity, an experiment --parallel 16 vs 64, and the
# client-vs-server timing check. Carry: .whl (pydantic & co, as evidence/h200-capacity) and .llamacpp-src
# (scripts/llamacpp_src.sh). Each step bounded with timeout; everything into $OUT.
set -uo pipefail
export COLUMNS=200 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed" | tee "$OUT/setup.txt"; exit 3; }
export PYTHONPATH=/tmp/site:$PWD/src:$PWD
ST="python3 -m seatrial.cli.app"
L=/tmp/llama; mkdir -p $L && tar -xzf .llamacpp-src/llama.cpp-src.tar.gz -C $L
start=$(date +%s)
( cd $L && timeout 330 cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF >"$OUT/cmake.log" 2>&1 && timeout 330 cmake --build build --target llama-server -j 16 >"$OUT/build.log" 2>&1 ) \
  || { echo "build failed"; tail -30 "$OUT/build.log"; exit 5; }
echo "built in $(( $(date +%s) - start )) s" | tee "$OUT/build_time.txt"
PYTHONPATH=$L/gguf-py:$PYTHONPATH timeout 120 python3 src/seatrial/server/llamagguf.py /tmp/l1b.gguf --shape llama-3.2-1b \
  --vocab $L/models/ggml-vocab-llama-bpe.gguf > "$OUT/gguf.txt" 2>&1 || { cat "$OUT/gguf.txt"; exit 5; }
$L/build/bin/llama-server --model /tmp/l1b.gguf --alias l1b -ngl 99 --parallel 64 -c 131072 --metrics --host 127.0.0.1 --port 8080 > "$OUT/server.log" 2>&1 &
SRV=$!
for i in $(seq 60); do curl -sf 127.0.0.1:8080/health >/dev/null && break; sleep 1; done
U=http://127.0.0.1:8080
timeout 60 $ST hw --trials inventory --json "$OUT/hw.json" > "$OUT/hw.txt" 2>&1
timeout 150 $ST bench --url $U --input-len 1024 --output-len 128 --concurrency 1,16,64 --requests 128 --warmup 4 \
  --gpu-telemetry --out "$OUT/bench" --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
timeout 120 $ST accept --url $U --trials basic,saturation,prefix-cache --out "$OUT/accept" --json "$OUT/accept.json" > "$OUT/accept.txt" 2>&1
timeout 90 $ST capacity --url $U --input-len 1024 --output-len 128 --slo ttft_ms:500 --mode concurrency --start 8 --max-rate 256 \
  --json "$OUT/capacity.json" > "$OUT/capacity.txt" 2>&1
kill $SRV; wait $SRV 2>/dev/null
cat > /tmp/plan.yaml <<YAML
serve: {command: [$L/build/bin/llama-server, --model, /tmp/l1b.gguf, --alias, l1b, -ngl, "99", -c, "131072", --metrics, --host, 127.0.0.1, --port, "{port}"], ready_timeout_s: 120}
baseline: {name: par-16, args: [--parallel, "16"]}
treatments: [{name: par-64, args: [--parallel, "64"]}]
workload: {model: l1b, input_len: 1024, output_len: 128, ignore_eos: true, concurrency: [64], requests: 128, warmup: 4}
starts: 2
decide: {profiles: {batch: {concurrency: 64, metric: output_tok_s, min_gain_pct: 5}}}
YAML
timeout 150 $ST experiment /tmp/plan.yaml --out "$OUT/experiment" --json "$OUT/experiment.json" > "$OUT/experiment.txt" 2>&1
python3 - "$OUT/bench/requests.jsonl" > "$OUT/timing_check.txt" 2>&1 <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"measure"' in l]
for c in sorted({r["concurrency"] for r in rows}):
    st = [r for r in rows if r["concurrency"] == c and r["error"] is None and r.get("server_timing")]
    ttft = [r["ttft_ms"] / r["server_timing"]["ttft_ms"] for r in st if r["server_timing"].get("ttft_ms")]
    tpot = [r["tpot_ms"] / r["server_timing"]["tpot_ms"] for r in st if r.get("tpot_ms") and r["server_timing"].get("tpot_ms")]
    print(f"C={c} n={len(st)} median client/server TTFT {statistics.median(ttft) if ttft else None} TPOT {statistics.median(tpot) if tpot else None}")
PY
cat "$OUT/timing_check.txt"
