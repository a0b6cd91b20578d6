"""The node probe: what a node holds and runs, as JSON. Standard library only (Python 3.8+), so that
nodes need no seatrial install: ``sync`` and ``doctor`` send this file on stdin to ``python3 -`` over
SSH (or run it locally the same way), with one JSON argument, and read one JSON document back.

Actions (``{"action": ...}``):
- ``manifest`` ``{"root", "verify": "key"|"full", "threads"}``: every file under root (no symlinked
  folder walked) with its apparent size, allocated bytes and inode; each safetensors file's tensor
  count, data bytes and header SHA-256; the index's total_size; ``key`` SHA-256 of configs, index,
  tokenizer files and every safetensors header; with ``full`` a SHA-256 tree hash of every byte
  (64 MiB chunks hashed in parallel threads, then the file's digest over the chunk digests and size).
- ``space`` ``{"paths"}``: free bytes and whether each path (or its nearest existing parent) is writable.
- ``clean`` ``{"root"}``: remove rsync's stale temporaries (``.NAME.XXXXXX``) a killed receiver left.
- ``write`` ``{"path", "text"}``: write a small text file atomically (the manifest into DEST).
- ``prepare`` ``{"root"}``: before a transfer, in one call: ``space`` of root, ``clean`` of it, and the
  bytes of the files it already holds.
- ``fingerprint`` ``{"packages", "files", "model_dir", "image", "env_prefixes", "secret_words"}``: OS,
  kernel, Python, package versions, NVIDIA driver and CUDA, a container image's digest, SHA-256 of
  files, the checkpoint manifest, and environment variables by prefix (secret-named ones dropped).
"""

import hashlib
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CHUNK = 64 << 20
MANIFEST = ".seatrial-manifest.json"
PARTIAL_DIR = ".rsync-partial"
KEY_SUFFIXES = (".json", ".jinja", ".model", ".txt", ".tiktoken", ".py")
STALE = re.compile(r"^\..+\.[A-Za-z0-9]{6}$")  # rsync's temporary name for a file being received


def walk(root):
    """(relative path, absolute path) of every regular file, never entering a symlinked folder;
    rsync's own working files and the manifest are left out."""
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != PARTIAL_DIR and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel == MANIFEST or STALE.match(name) or not os.path.isfile(path):
                continue
            yield rel, path


def safetensors_header(path):
    """Tensor count, data bytes, header SHA-256 and the header's own total (the sum of tensor bytes)."""
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            return {"error": "too short for a safetensors header"}
        (n,) = struct.unpack("<Q", raw)
        size = os.fstat(fh.fileno()).st_size
        if n > size - 8 or n > 100_000_000:
            return {"error": f"header length {n} is past the file's {size} bytes"}
        header = fh.read(n)
    try:
        doc = json.loads(header)
        tensors = {k: v for k, v in doc.items() if k != "__metadata__"}
        data = sum(int(v["data_offsets"][1]) - int(v["data_offsets"][0]) for v in tensors.values())
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return {"error": f"header is not valid: {exc}"}
    return {
        "tensors": len(tensors),
        "tensor_bytes": data,
        "data_bytes": size - 8 - n,
        "header_sha256": hashlib.sha256(header).hexdigest(),
    }


def _chunk(path, offset, length):
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        fh.seek(offset)
        left = length
        while left > 0:
            block = fh.read(min(left, 8 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.digest()


def tree_hashes(paths, threads):
    """{path: tree SHA-256} over 64 MiB chunks hashed in ``threads`` parallel threads."""
    jobs = [(p, off, min(CHUNK, size - off)) for p, size in paths for off in range(0, max(size, 1), CHUNK)]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        digests = list(pool.map(lambda j: _chunk(*j), jobs))
    parts: dict = {}
    for (p, _, _), d in zip(jobs, digests):  # noqa: B905 (Python 3.8 nodes: no strict=)
        parts.setdefault(p, []).append(d)
    sizes = dict(paths)
    return {p: hashlib.sha256(b"".join(ds) + str(sizes[p]).encode()).hexdigest() for p, ds in parts.items()}


def manifest(args):
    root = args["root"]
    if not os.path.isdir(root):
        return {"error": f"{root} is not a folder"}
    files, safetensors, key = {}, {}, {}
    for rel, path in walk(root):
        st = os.stat(path)
        files[rel] = {
            "size": st.st_size,
            "allocated": st.st_blocks * 512,
            "inode": [st.st_dev, st.st_ino],
            "nlink": st.st_nlink,
        }
        if rel.endswith(".safetensors"):
            safetensors[rel] = safetensors_header(path)
            key[rel] = safetensors[rel].get("header_sha256")
        elif rel.endswith(KEY_SUFFIXES) and st.st_size <= 64 << 20:
            with open(path, "rb") as fh:
                key[rel] = hashlib.sha256(fh.read()).hexdigest()
    out = {
        "root": root,
        "files": files,
        "safetensors": safetensors,
        "key": key,
        "verify": args.get("verify", "key"),
    }
    index_path = os.path.join(root, "model.safetensors.index.json")
    if os.path.isfile(index_path):
        try:
            with open(index_path, "rb") as fh:
                index = json.load(fh)
            wm = index.get("weight_map") or {}
            out["index"] = {
                "total_size": (index.get("metadata") or {}).get("total_size"),
                "tensors": len(wm),
                "files": sorted(set(wm.values())),
            }
        except ValueError as exc:
            out["index"] = {"error": f"not valid JSON: {exc}"}
    if args.get("verify") == "full":
        paths = [(os.path.join(root, rel), meta["size"]) for rel, meta in files.items()]
        hashed = tree_hashes(paths, args.get("threads") or os.cpu_count() or 1)
        out["full"] = {rel: hashed[os.path.join(root, rel)] for rel in files}
    return out


def _writable(path):
    probe = path
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe.rstrip("/")) or "/"
    return probe, os.access(probe, os.W_OK)


def space(args):
    out = {}
    for path in args["paths"]:
        where, writable = _writable(path)
        out[path] = {
            "exists": os.path.isdir(path),
            "free_bytes": shutil.disk_usage(where).free,
            "writable": writable,
            "checked": where,
        }
    return out


def clean(args):
    removed = []
    for folder, _dirs, names in os.walk(args["root"], followlinks=False):
        for name in names:
            if STALE.match(name):
                os.remove(os.path.join(folder, name))
                removed.append(os.path.relpath(os.path.join(folder, name), args["root"]))
    return {"removed": sorted(removed)}


def write(args):
    path = args["path"]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp-seatrial"
    with open(tmp, "w") as fh:
        fh.write(args["text"])
    os.replace(tmp, path)
    return {"written": path}


def _run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{argv[0]}: {exc}"
    if done.returncode != 0:
        return None, " ".join(
            (done.stderr or done.stdout).strip().splitlines()[-1:]
        ) or f"exit {done.returncode}"
    return done.stdout.strip(), None


def _versions(names):
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return {n: {"unavailable": "importlib.metadata is missing"} for n in names}
    out = {}
    for name in names:
        found = [d for d in (name, name.replace("_", "-")) if d]
        version = None
        for dist in found:
            try:
                version = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        out[name] = version if version else {"unavailable": "not installed"}
    return out


def _nvidia():
    text, err = _run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"])
    if text is None:
        return {"unavailable": err}
    cuda, _ = _run(["nvidia-smi"])
    match = re.search(r"CUDA Version:\s*([\d.]+)", cuda or "")
    rows = [line.split(", ") for line in text.splitlines() if line.strip()]
    return {
        "driver": sorted({r[0] for r in rows}),
        "gpus": [r[-1] for r in rows],
        "cuda": match.group(1) if match else None,
    }


def _image(name):
    for tool in ("docker", "podman"):
        if shutil.which(tool):
            text, err = _run([tool, "image", "inspect", "--format", "{{.Id}} {{json .RepoDigests}}", name])
            if text is not None:
                image_id, _, digests = text.partition(" ")
                return {"tool": tool, "id": image_id, "repo_digests": json.loads(digests or "[]")}
            return {"unavailable": f"{tool} image inspect {name}: {err}"}
    return {"unavailable": "neither docker nor podman is installed"}


def _sha256(path):
    if not os.path.isfile(path):
        return {"unavailable": "no such file"}
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _secret(name, words):
    k = name.lower()
    return any(w in k for w in words) or k.endswith(("_key", "_token"))


def fingerprint(args):
    words = args.get("secret_words") or []
    env = {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(tuple(args.get("env_prefixes") or ())) and not _secret(k, words)
    }
    release = {}
    if os.path.isfile("/etc/os-release"):
        with open("/etc/os-release") as fh:
            release = dict(line.rstrip("\n").split("=", 1) for line in fh if "=" in line)
    out = {
        "os": release.get("PRETTY_NAME", "").strip('"') or platform.platform(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "packages": _versions(args.get("packages") or []),
        "nvidia": _nvidia(),
        "files": {p: _sha256(p) for p in args.get("files") or []},
        "env": env,
    }
    if args.get("image"):
        out["image"] = _image(args["image"])
    model_dir = args.get("model_dir")
    if model_dir:
        path = os.path.join(model_dir, MANIFEST)
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                synced = json.load(fh)
            out["model"] = {
                "source": MANIFEST,
                "key": synced.get("key"),
                "files": len(synced.get("files") or {}),
                "total_size": (synced.get("index") or {}).get("total_size"),
            }
        else:
            m = manifest({"root": model_dir, "verify": "key"})
            out["model"] = (
                {"unavailable": m["error"]}
                if "error" in m
                else {
                    "source": "computed",
                    "key": m["key"],
                    "files": len(m["files"]),
                    "total_size": (m.get("index") or {}).get("total_size"),
                }
            )
    return out


def prepare(args):
    root = args["root"]
    have = sum(os.path.getsize(p) for _, p in walk(root)) if os.path.isdir(root) else 0
    removed = clean({"root": root})["removed"] if os.path.isdir(root) else []
    return {"space": space({"paths": [root]})[root], "removed": removed, "have_bytes": have}


ACTIONS = {
    "manifest": manifest,
    "space": space,
    "clean": clean,
    "write": write,
    "prepare": prepare,
    "fingerprint": fingerprint,
}


def main(argv):
    args = json.loads(argv[1])
    try:
        result = ACTIONS[args["action"]](args)
    except OSError as exc:
        result = {"error": "{}: {}".format(getattr(exc, "filename", "") or "", exc.strerror or exc)}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
