#!/usr/bin/env bash
# seatrial io's storage trials on the H200 host's disk (issue 41): storage.read, storage.write, storage.load on a
# generated safetensors checkpoint (8 shards x 1 GiB of real bytes), kv.disk at KV chunk 1 MiB and 2 MiB (a
# Llama-3-8B block), 3 repeats each. The host has no fio: the bundle made here by fio-bundle.sh is carried as
# .fio-bundle.tar.xz, and the wheels of pydantic, pydantic-core, annotated-types, typing-inspection, typing-extensions,
# orjson, typer, rich, click, shellingham, markdown-it-py, mdurl and pygments in .whl/ (as h200-capacity does).
# IO_RUNTIME, IO_SIZE_MIB, KV_CONC, IO_T1, IO_T2: a shorter call (defaults 10 s, 2048 MiB, 1,4,16,64, 280 s, 200 s).
# IO_DIR: the folder whose filesystem is measured (default /tmp: say in the note which disk that is).
set -uo pipefail
export COLUMNS=200 PYTHONUNBUFFERED=1
IO_DIR=${IO_DIR:-/tmp/seatrial-io-h200}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" | tee "$OUT/io.txt"; exit 3; }
mkdir -p /tmp/fio-bundle && tar -C /tmp/fio-bundle -xJf .fio-bundle.tar.xz \
    || { echo "fio bundle missing: carry .fio-bundle.tar.xz" | tee "$OUT/io.txt"; exit 3; }
export PATH=/tmp/fio-bundle/bin:$PATH PYTHONPATH=/tmp/site:$PWD/src:$PWD
{
  date -u; nproc; fio --version
  mkdir -p "$IO_DIR"; df -hT "$IO_DIR"; findmnt -T "$IO_DIR" || true; lsblk -d -o NAME,MODEL,SIZE,ROTA 2>/dev/null || true
  python3 - "$IO_DIR/ckpt" <<'PY'
import json, os, sys
root = sys.argv[1]; os.makedirs(root, exist_ok=True)
shard, n = 1 << 30, 8
index = {"metadata": {"total_size": n * shard}, "weight_map": {}}
for i in range(n):
    name = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
    header = json.dumps({f"w{i}": {"dtype": "BF16", "shape": [shard // 2], "data_offsets": [0, shard]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(os.path.join(root, name), "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        for _ in range(shard // (64 << 20)):
            f.write(os.urandom(64 << 20))
    index["weight_map"][f"w{i}"] = name
json.dump(index, open(os.path.join(root, "model.safetensors.index.json"), "w"))
print("checkpoint", root, n * shard, "bytes")
PY
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache not dropped: storage.load reads O_DIRECT anyway)"
  timeout ${IO_T1:-280} python3 -m seatrial.cli.app io --trials storage --path "$IO_DIR/work" --checkpoint "$IO_DIR/ckpt" \
      --runtime ${IO_RUNTIME:-10} --size-mib ${IO_SIZE_MIB:-2048} --jobs 8 --json "$OUT/io_storage.json" --out "$OUT/run-storage"
  echo "exit code $?"
  timeout ${IO_T2:-200} python3 -m seatrial.cli.app io --trials kv.disk --path "$IO_DIR/work" --kv-chunk-bytes 2097152 \
      --kv-concurrency ${KV_CONC:-1,4,16,64} --kv-chunks 512 --json "$OUT/io_kvdisk.json" --out "$OUT/run-kvdisk"
  echo "exit code $?"
  rm -rf "$IO_DIR"
} 2>&1 | tee "$OUT/io.txt"
# at most 8 files come back from a device call: the two run folders travel packed
tar -czf "$OUT/io-runs.tgz" -C "$OUT" run-storage run-kvdisk && rm -rf "$OUT/run-storage" "$OUT/run-kvdisk"
