#!/usr/bin/env bash
# Issue 39 on a lent H100/H200: llama-server with CUDA (sm_90) from the carried stripped source, a Llama-3.2-1B-shaped
# GGUF (random F16, the real tokenizer of models/ggml-vocab-llama-bpe.gguf), measured by seatrial. Two calls, each
# under the 600 s a device call may run (the build alone takes about 4 minutes):
#   bash evidence/h200-llamacpp/device_run.sh a   build, GGUF, hw inventory, bench at C=1,16,64 with GPU telemetry
#                                                  and the server join, and the client-vs-server timing check
#   bash evidence/h200-llamacpp/device_run.sh b   an experiment --parallel 16 vs 64, capacity, then accept
#                                                  (evidence/h200-llamacpp/accept_profile.yaml) with what is left
#   CUDA_FA=OFF CONC=1 bash evidence/h200-llamacpp/device_run.sh c   a then b in one call (a shorter build,
#                                                  32 requests a bench level), for a session with one call left
#   bash evidence/h200-llamacpp/device_run.sh d   (build,) hw, the single user at the capacity workload, capacity
#                                                  over STARTS fresh starts (--serve); the build's binary goes
#                                                  back as $OUT/llama-server.xz (carry it in .llamacpp-bin/)
#   CUDA_FA=OFF bash evidence/h200-llamacpp/device_run.sh f   (build,) accept's basic and prefix-cache trials alone
#   bash evidence/h200-llamacpp/device_run.sh g   (build,) one user, a closed-loop capacity search (issue 38 at 64+
#                                                  users: CPAR slots, SLO), then the referee around its bound
#   CAP=R bash evidence/h200-llamacpp/device_run.sh e   the referee: long bench levels at 0.9 and 1.1 x R (req/s,
#                                                  or users with CAP_MODE=concurrency, as phase d's search)
#                                                  with the SLO as --goodput, then accept
# The build and the GGUF stay in the ignored .llamacpp-build/ (a warm machine keeps them for call b; a fresh one
# builds again, incrementally where ninja's tree survived). Carry: .whl (pydantic, typer, rich & co.) and
# .llamacpp-src (scripts/llamacpp_src.sh). Everything a call writes is packed into $OUT/<phase>.tgz.
# Overrides for a dry run against a CPU llama-server: BIN, GGUF, IN, OLEN, CONC, REQ, PAR, CTX, NGL,
# CAP_START, CAP_MAX, CAP_PROBES, XREQ, ACCEPT_SCALE (small: the profile's small: tree), PY, NO_WHEELS, BUDGET;
# CUDA_FA=OFF builds without ggml's FlashAttention CUDA kernels (a shorter build; another server).
set -uo pipefail
PHASE=${1:?phase a or b}
T0=$(date +%s); DEADLINE=$(( T0 + ${BUDGET:-560} ))
export COLUMNS=200 PYTHONUNBUFFERED=1
R=/tmp/res-$PHASE; rm -rf "$R"; mkdir -p "$R"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
trap 'tar -czf "$OUT/$PHASE.tgz" -C /tmp "res-$PHASE"; for f in "$R"/*.txt; do echo "== $f"; tail -25 "$f"; done' EXIT
# step WANT CMD...: CMD under timeout WANT, or what is left of the call's budget less 20 s
step() { local want=$1; shift; local left=$(( DEADLINE - $(date +%s) - 20 )); (( left < want )) && want=$left
  (( want < 5 )) && { echo "skipped (no time left): $*"; return 124; }; timeout -k 5 "$want" "$@"; }
if [ -d .whl ] && [ -z "${NO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$R/setup.txt"; exit 3; }
  export PYTHONPATH=/tmp/site:$PWD/src:$PWD
else
  export PYTHONPATH=$PWD/src:$PWD
fi
PY=${PY:-python3}; ST="$PY -m seatrial.cli.app"
B=$PWD/.llamacpp-build; L=$B/src; mkdir -p "$B"
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1; nproc; } > "$R/host.txt"
if [ -z "${BIN:-}" ] && [ ! -x "$L/build/bin/llama-server" ] && ls .llamacpp-bin/llama-server.xz* > /dev/null 2>&1; then
  mkdir -p "$L/build/bin" "$L/models"  # a binary an earlier call built and sent back in parts (carried): no build
  cat $(ls .llamacpp-bin/llama-server.xz* | sort) | xz -dc > "$L/build/bin/llama-server" && chmod +x "$L/build/bin/llama-server"
  [ -f "$L/models/ggml-vocab-llama-bpe.gguf" ] || tar -xzf .llamacpp-src/llama.cpp-src.tar.gz -C "$L" ./models/ggml-vocab-llama-bpe.gguf ./gguf-py
  echo "llama-server from the carried binary" | tee "$R/build_time.txt"
fi
if [ -z "${BIN:-}" ]; then
  BIN=$L/build/bin/llama-server
  if [ ! -x "$BIN" ]; then
    [ -f "$L/CMakeLists.txt" ] || { mkdir -p "$L" && tar -xzf .llamacpp-src/llama.cpp-src.tar.gz -C "$L"; }
    start=$(date +%s)
    if [ -z "${GGUF:-}" ] && [ ! -s "$B/l1b.gguf" ]; then  # the GGUF (one core, about a minute) beside the build
      PYTHONPATH=$L/gguf-py:$PYTHONPATH timeout 240 $PY src/seatrial/server/llamagguf.py "$B/l1b.gguf.part" --shape llama-3.2-1b \
        --vocab "$L/models/ggml-vocab-llama-bpe.gguf" > "$R/gguf.txt" 2>&1 && mv "$B/l1b.gguf.part" "$B/l1b.gguf" &
    fi
    ( cd "$L" && step 90 cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=${CUDA_FA:-ON} -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF >"$R/cmake.log" 2>&1 && step 420 cmake --build build --target llama-server -j 16 >"$R/build.log" 2>&1 )
    rc=$?
    echo "build rc $rc in $(( $(date +%s) - start )) s (GGML_CUDA_FA=${CUDA_FA:-ON})" | tee "$R/build_time.txt"
    tail -c 4000 "$R/build.log" > "$R/build_tail.txt" 2>/dev/null; rm -f "$R/build.log"
    (( rc == 0 )) || exit 5
    # back in parts under the 16 MiB a returned file may have (cat them in order into .llamacpp-bin/ to carry)
    xz -T16 -6 -c "$BIN" | split -b 15M - "$OUT/llama-server.xz."; ls -la "$BIN" "$OUT"/llama-server.xz.* >> "$R/build_time.txt"
  else
    echo "llama-server already built (kept from an earlier call)" | tee "$R/build_time.txt"
  fi
fi
wait
if [ -z "${GGUF:-}" ]; then
  GGUF=$B/l1b.gguf
  if [ ! -s "$GGUF" ]; then
    PYTHONPATH=$L/gguf-py:$PYTHONPATH step 180 $PY src/seatrial/server/llamagguf.py "$GGUF.part" --shape llama-3.2-1b \
      --vocab "$L/models/ggml-vocab-llama-bpe.gguf" > "$R/gguf.txt" 2>&1 && mv "$GGUF.part" "$GGUF" || { cat "$R/gguf.txt"; exit 5; }
  fi
  ls -la "$GGUF" >> "$R/gguf.txt"
fi
IN=${IN:-1024} OLEN=${OLEN:-128} CONC=${CONC:-1,16,64} REQ=${REQ:-128} PAR=${PAR:-256} CTX=${CTX:-524288} NGL=${NGL:-99}
PORT=${PORT:-8080}; U=http://127.0.0.1:$PORT
SRV=
serve() {  # serve LOGNAME [ARGS...]: llama-server in the background, then wait for /health
  local log=$1; shift
  "$BIN" --model "$GGUF" --alias l1b -ngl "$NGL" --parallel "$PAR" -c "$CTX" --metrics --host 127.0.0.1 --port "$PORT" \
    "$@" > "$R/$log" 2>&1 &
  SRV=$!
  for _ in $(seq 120); do
    $PY -c "import urllib.request,sys; urllib.request.urlopen('$U/health', timeout=2)" 2>/dev/null && return 0
    kill -0 $SRV 2>/dev/null || break; sleep 1
  done
  echo "server did not come up"; tail -30 "$R/$log"; return 1
}
unserve() { [ -n "$SRV" ] && kill $SRV 2>/dev/null && wait $SRV 2>/dev/null; SRV=; }
timing_check() {  # timing_check FOLDER...: client against llama-server's own timings, per level, medians
  $PY - "$@" <<'PY'
import json, statistics, sys
def med(x): return round(statistics.median(x), 3) if x else None
for folder in sys.argv[1:]:
    rows = [json.loads(l) for l in open(folder + "/requests.jsonl")]
    rows = [r for r in rows if r.get("phase", "measure") == "measure"]
    for c in sorted({r.get("concurrency") for r in rows}, key=lambda v: (v is None, v)):
        at = [r for r in rows if r.get("concurrency") == c]
        ok = [r for r in at if r.get("error") is None]
        st = [(r, r["server_timing"]) for r in ok if r.get("server_timing")]
        ratio = lambda k: med([r[k] / s[k] for r, s in st if r.get(k) and s.get(k)])
        gap = lambda k: med([r[k] - s[k] for r, s in st if r.get(k) is not None and s.get(k) is not None])
        print(f"{folder.rsplit('/', 1)[-1]} C={c} rows={len(at)} ok={len(ok)} joined={len(st)} client/server median "
              f"TTFT {ratio('ttft_ms')} TPOT {ratio('tpot_ms')} E2E {ratio('e2e_ms')}; client-server ms p50 "
              f"TTFT {gap('ttft_ms')} E2E {gap('e2e_ms')}")
PY
}
phase_a() {
  step 60 $ST hw --trials inventory --json "$R/hw.json" > "$R/hw.txt" 2>&1; echo "hw exit $?" >> "$R/hw.txt"
  serve server_a.log || exit 6
  step 200 $ST bench --url $U --input-len $IN --output-len $OLEN --concurrency $CONC --requests $REQ --warmup 4 \
    --gpu-telemetry --out "$R/bench" --json "$R/bench.json" > "$R/bench.txt" 2>&1; echo "bench exit $?" >> "$R/bench.txt"
  step 120 $ST bench --url $U --input-len $IN --output-len $OLEN --concurrency ${CBIG:-256} --requests ${REQBIG:-256} \
    --warmup 8 --gpu-telemetry --out "$R/bench_big" --json "$R/bench_big.json" > "$R/bench_big.txt" 2>&1
  echo "bench exit $?" >> "$R/bench_big.txt"
  unserve
  tail -60 "$R/server_a.log" > "$R/server_a_tail.txt"; rm -f "$R/server_a.log"
  # the same C=1 level on a server without its host-RAM prompt cache (--cache-ram 0): what of TTFT that cache's
  # save of the previous prompt costs, outside llama-server's own prompt_ms
  serve server_nocache.log --cache-ram 0 || exit 6
  step 60 $ST bench --url $U --input-len $IN --output-len $OLEN --concurrency 1 --requests 64 --warmup 4 \
    --out "$R/bench_nocache" --json "$R/bench_nocache.json" > "$R/bench_nocache.txt" 2>&1
  echo "bench exit $?" >> "$R/bench_nocache.txt"
  unserve; tail -30 "$R/server_nocache.log" > "$R/server_nocache_tail.txt"; rm -f "$R/server_nocache.log"
  timing_check "$R/bench" "$R/bench_big" "$R/bench_nocache" > "$R/timing_check.txt" 2>&1
  for d in bench bench_big bench_nocache; do [ -f "$R/$d/requests.jsonl" ] && gzip "$R/$d/requests.jsonl"; done
}
phase_b() {
  cat > "$R/plan.yaml" <<YAML
serve: {command: [$BIN, --model, $GGUF, --alias, l1b, -ngl, "$NGL", -c, "${XCTX:-131072}", --metrics, --host, 127.0.0.1, --port, "{port}"], ready_timeout_s: 120, stop_grace_s: 20}
baseline: {name: par-16, args: [--parallel, "16"]}
treatments: [{name: par-64, args: [--parallel, "64"]}]
workload: {model: l1b, input_len: $IN, output_len: $OLEN, ignore_eos: true, concurrency: [64], requests: ${XREQ:-64}, warmup: 2}
starts: 2
decide: {profiles: {batch: {concurrency: 64, metric: output_tok_s, min_gain_pct: 5}}}
YAML
  step 150 $ST experiment "$R/plan.yaml" --out "$R/experiment" --json "$R/experiment.json" > "$R/experiment.txt" 2>&1
  echo "experiment exit $?" >> "$R/experiment.txt"
  serve server_b.log || exit 6
  step 170 $ST capacity --url $U --input-len $IN --output-len $OLEN --slo ttft_ms:500 --mode concurrency --start ${CAP_START:-8} \
    --max-rate ${CAP_MAX:-64} --max-probes ${CAP_PROBES:-4} --precision 0.2 --time-budget ${CAP_BUDGET:-150s} --out "$R/capacity" --json "$R/capacity.json" \
    > "$R/capacity.txt" 2>&1; echo "capacity exit $?" >> "$R/capacity.txt"
  if (( DEADLINE - $(date +%s) > 60 )); then
    step 120 $ST accept --url $U --profile evidence/h200-llamacpp/accept_profile.yaml \
      --trials ${ACCEPT_TRIALS:-basic,prefix-cache,saturation} ${ACCEPT_SCALE:+--scale $ACCEPT_SCALE} \
      --out "$R/accept" --json "$R/accept.json" > "$R/accept.txt" 2>&1; echo "accept exit $?" >> "$R/accept.txt"
  else
    echo "accept skipped: too little of the call left" | tee "$R/accept.txt"
  fi
  unserve; tail -60 "$R/server_b.log" > "$R/server_b_tail.txt"; rm -f "$R/server_b.log"
  for d in experiment capacity accept; do find "$R/$d" -name requests.jsonl -exec gzip {} + 2>/dev/null; done
}
# issue 38's GPU referee and issue 39's capacity: the capacity workload (CIN/COUT tokens), its SLO, a server
# of CPAR slots without its host prompt cache (its save of each previous prompt is serial host work)
CIN=${CIN:-256} COUT=${COUT:-64} SLO=${SLO:-ttft_ms:1000,tpot_ms:40} CPAR=${CPAR:-64} CCTX=${CCTX:-65536}
CAPW="--input-len $CIN --output-len $COUT"
phase_d() {  # the single user's latency at the capacity workload, then capacity over STARTS fresh starts
  PAR=$CPAR CTX=$CCTX serve server_d.log --cache-ram 0 || exit 6
  step 60 $ST bench --url $U $CAPW --concurrency 1 --requests 32 --warmup 4 --out "$R/single" \
    --json "$R/single.json" > "$R/single.txt" 2>&1; echo "bench exit $?" >> "$R/single.txt"
  step 90 $ST bench --url $U $CAPW --concurrency ${LADDER:-8,16,32,64} --requests 128 --warmup 8 --goodput $SLO \
    --out "$R/ladder" --json "$R/ladder.json" > "$R/ladder.txt" 2>&1; echo "bench exit $?" >> "$R/ladder.txt"
  unserve; rm -f "$R/server_d.log"
  local serve_cmd="$BIN --model $GGUF --alias l1b -ngl $NGL --parallel $CPAR -c $CCTX --cache-ram 0 --metrics --host 127.0.0.1 --port {port}"
  step 600 $ST capacity --serve "$serve_cmd" --starts ${STARTS:-3} $CAPW --slo $SLO --mode ${CAP_MODE:-rate} --start ${CAP_START:-8} \
    --precision ${CAP_PRECISION:-0.25} ${CAP_MAXREQ:+--max-probe-requests $CAP_MAXREQ} --time-budget ${CAP_BUDGET:-100s} --out "$R/capacity" --json "$R/capacity.json" \
    > "$R/capacity.txt" 2>&1; echo "capacity exit $?" >> "$R/capacity.txt"
}
referee() {  # long steady bench levels at REF x the capacity CAP (req/s, or users with CAP_MODE=concurrency),
  # the SLO as --goodput; a closed level measures at least 10 x its users (REF_N) after 2 x its users (REF_W)
  for f in ${REF:-0.9 1.1}; do
    local at load n w
    if [ "${CAP_MODE:-rate}" = rate ]; then at=$($PY -c "print(round($f * ${CAP:?the replica capacity}, 3))"); load="--rate $at"
      n=${REF_N:-1500}; w=${REF_W:-300}
    else at=$($PY -c "print(round($f * ${CAP:?the replica capacity}))"); load="--concurrency $at"
      n=$(( ${REF_N:-1500} > 10 * at ? ${REF_N:-1500} : 10 * at )); w=$(( ${REF_W:-300} > 2 * at ? ${REF_W:-300} : 2 * at )); fi
    step ${REF_S:-120} $ST bench --url $U $CAPW $load --requests $n --warmup $w \
      --goodput $SLO --gpu-telemetry --out "$R/ref-$f" --json "$R/ref-$f.json" > "$R/ref-$f.txt" 2>&1
    echo "bench exit $? ($load = $f x $CAP, $n requests after $w)" >> "$R/ref-$f.txt"
  done
}
phase_e() {  # the referee on a fresh server, then accept
  PAR=$CPAR CTX=$CCTX serve server_e.log --cache-ram 0 || exit 6
  referee
  unserve; tail -30 "$R/server_e.log" > "$R/server_e_tail.txt"; rm -f "$R/server_e.log"
  if (( DEADLINE - $(date +%s) > 90 )); then
    PAR=64 CTX=131072 serve server_acc.log || exit 6
    step 150 $ST accept --url $U --profile evidence/h200-llamacpp/accept_profile.yaml \
      --trials ${ACCEPT_TRIALS:-basic,prefix-cache,saturation} ${ACCEPT_SCALE:+--scale $ACCEPT_SCALE} \
      --out "$R/accept" --json "$R/accept.json" > "$R/accept.txt" 2>&1; echo "accept exit $?" >> "$R/accept.txt"
    unserve; tail -30 "$R/server_acc.log" > "$R/server_acc_tail.txt"; rm -f "$R/server_acc.log"
  else
    echo "accept skipped: too little of the call left" | tee "$R/accept.txt"
  fi
}
phase_g() {  # issue 38 at 64+ in flight: one user, then a closed-loop capacity search on one server of CPAR slots,
  # then the referee around its bound with what is left of the call (phase e on a fresh server otherwise)
  PAR=$CPAR CTX=$CCTX serve server_g.log --cache-ram 0 || exit 6
  step 40 $ST bench --url $U $CAPW --concurrency 1 --requests 32 --warmup 4 --out "$R/single" \
    --json "$R/single.json" > "$R/single.txt" 2>&1; echo "bench exit $?" >> "$R/single.txt"
  step ${CAP_S:-300} $ST capacity --url $U $CAPW --slo $SLO --attainment ${ATTAIN:-0.9} --mode concurrency \
    --start ${CAP_START:-32} --max-rate ${CAP_MAX:-512} --precision ${CAP_PRECISION:-0.25} \
    --max-probe-requests ${CAP_MAXREQ:-6000} --time-budget ${CAP_BUDGET:-280s} --out "$R/capacity" \
    --json "$R/capacity.json" > "$R/capacity.txt" 2>&1; echo "capacity exit $?" >> "$R/capacity.txt"
  CAP=${CAP:-$($PY -c "import json; print(json.load(open('$R/capacity.json'))['capacity']['concurrency'] or '')" 2>/dev/null)}
  if [ -n "$CAP" ]; then CAP_MODE=concurrency referee; else echo "no bound to referee" | tee "$R/ref.txt"; fi
  unserve; tail -30 "$R/server_g.log" > "$R/server_g_tail.txt"; rm -f "$R/server_g.log"
}
case $PHASE in
  a) phase_a ;;
  b) phase_b ;;
  c) REQ=${REQ_C:-32} phase_a; phase_b ;;  # one call for both: a shorter bench, then b
  d) step 60 $ST hw --trials inventory --json "$R/hw.json" > "$R/hw.txt" 2>&1; phase_d ;;
  e) phase_e ;;
  g) phase_g ;;
  f) PAR=64 CTX=131072 serve server_acc.log || exit 6  # accept alone (prefix-cache after the BOS fix)
     step 200 $ST accept --url $U --profile evidence/h200-llamacpp/accept_profile.yaml \
       --trials ${ACCEPT_TRIALS:-basic,prefix-cache} --out "$R/accept" --json "$R/accept.json" > "$R/accept.txt" 2>&1
     echo "accept exit $?" >> "$R/accept.txt"; unserve; tail -30 "$R/server_acc.log" > "$R/server_acc_tail.txt"
     rm -f "$R/server_acc.log" ;;
esac
find "$R" -name requests.jsonl -exec gzip {} + 2>/dev/null
echo "phase $PHASE done in $(( $(date +%s) - T0 )) s" | tee "$R/phase.txt"
