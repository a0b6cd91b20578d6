"""The node probe: what a node holds and runs, as JSON. Standard library only (Python 3.8+), so that
nodes need no seatrial install: ``sync`` and ``doctor`` send this file and its JSON arguments on stdin
(``python3 -c BOOT``: the length of the file, the file, then the arguments; nothing of them on a command
line, so neither a long manifest nor a hostile path reaches a shell or argv) over SSH, or run it locally
the same way, and read one JSON document back.

Actions (``{"action": ...}``):
Paths are resolved where the probe runs (``~`` and a relative path, as rsync resolves them there); the
answer's ``root`` is the absolute path, ``kind`` what is there (``dir``, ``file``, ``missing``, ``other``).

- ``manifest`` ``{"root", "verify": "key"|"full", "threads"}``: every regular file under root, read with
  lstat (a symlink is listed under ``links`` with its target, never followed; no symlinked folder
  walked), with its apparent size, allocated bytes and inode; each safetensors file's tensor count, data
  bytes and header SHA-256; the index's total_size; ``key`` SHA-256 of configs, index, tokenizer files
  and every safetensors header; with ``full`` a SHA-256 tree hash of every byte (64 MiB chunks hashed in
  parallel threads, then the file's digest over the chunk digests and size).
- ``space`` ``{"paths"}``: free bytes and whether each path (or its nearest existing parent) is writable.
- ``clean`` ``{"root", "files"}``: remove rsync's stale temporaries (``.NAME.XXXXXX`` beside NAME) of the
  named files a killed receiver left; nothing else.
- ``write`` ``{"path", "text"}``: write a small text file atomically (a temporary made with mkstemp in the
  same folder, then a rename; a symlink planted anywhere is never followed).
- ``prepare`` ``{"root", "files"}``: before a transfer, in one call: ``space`` of root, ``clean`` of it,
  the bytes of the files it already holds, and the partial data an interrupted run left per file.
- ``fingerprint`` ``{"packages", "files", "model_dir", "image", "env_prefixes"}``: OS, kernel, Python,
  package versions, NVIDIA driver and CUDA, a container image's digest, SHA-256 of files, the checkpoint
  manifest computed from the node's files (and the one sync wrote there, when there is one), and
  environment variables by prefix (the driver compares them by SHA-256 and shows no secret).
"""

import hashlib
import json
import os
import re
import shutil
import stat
import struct
import sys

# platform, subprocess, tempfile and concurrent.futures are imported where they are used: a probe of
# sync starts in a fresh interpreter several times per destination, and each import costs that start

CHUNK = 64 << 20
MANIFEST = ".seatrial-manifest.json"
PARTIAL_DIR = ".rsync-partial"
KEY_SUFFIXES = (".json", ".jinja", ".model", ".txt", ".tiktoken", ".py")
TEMP_SUFFIX = re.compile(r"\.[A-Za-z0-9]{6}$")  # rsync's temporary: ".NAME.XXXXXX" beside NAME
NAME_MAX_TEMP = 246  # rsync keeps this many characters of NAME in a temporary's name


def entries(root):
    """(relative path, absolute path, lstat) of every entry under root that is not a folder, never
    entering a symlinked folder; rsync's partial folders and the manifest are left out."""
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != PARTIAL_DIR and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel != MANIFEST:
                yield rel, path, os.lstat(path)


def walk(root):
    """(relative path, absolute path) of every regular file (lstat: a symlink is not one)."""
    for rel, path, st in entries(root):
        if stat.S_ISREG(st.st_mode):
            yield rel, path


def temp_prefix(name):
    """The start of rsync's temporary name for a file received as ``name``."""
    return "." + (name[1:] if name.startswith(".") else name)[:NAME_MAX_TEMP]


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
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        digests = list(pool.map(lambda j: _chunk(*j), jobs))
    parts: dict = {}
    for (p, _, _), d in zip(jobs, digests):  # noqa: B905 (Python 3.8 nodes: no strict=)
        parts.setdefault(p, []).append(d)
    sizes = dict(paths)
    return {p: hashlib.sha256(b"".join(ds) + str(sizes[p]).encode()).hexdigest() for p, ds in parts.items()}


def manifest(args):
    root, kind = _resolved(args["root"])
    if kind != "dir":
        return {"error": f"{root} is not a folder", "root": root, "kind": kind}
    files, links, other, safetensors, key = {}, {}, [], {}, {}
    for rel, path, st in entries(root):
        if stat.S_ISLNK(st.st_mode):
            links[rel] = os.readlink(path)
            continue
        if not stat.S_ISREG(st.st_mode):
            other.append(rel)
            continue
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
        "links": links,
        "other": other,
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
    """The nearest existing folder at or above ``path`` (made absolute first), and whether it is writable."""
    probe = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    return probe, os.access(probe, os.W_OK)


def _resolved(path):
    """(the absolute path, as rsync resolves ``~`` and a relative path here; what is there: ``dir``,
    ``file``, ``missing`` or ``other``)."""
    path = os.path.abspath(os.path.expanduser(path))
    kind = "missing"
    if os.path.lexists(path):
        kind = "dir" if os.path.isdir(path) else "file" if os.path.isfile(path) else "other"
    return path, kind


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


def _by_folder(files):
    """{folder: {temporary prefix: name}} of the relative names ``files``."""
    out: dict = {}
    for rel in files:
        folder, _, name = rel.rpartition("/")
        out.setdefault(folder, {})[temp_prefix(name)] = name
    return out


def clean(args):
    """Remove rsync's temporaries of the named files only (``.NAME.XXXXXX`` beside each NAME, a regular
    file): what a killed receiver left; a user's ``.notes.backup`` is no temporary of a file sent."""
    root, removed = args["root"], []
    for folder, prefixes in _by_folder(args.get("files") or []).items():
        where = os.path.join(root, folder)
        try:
            names = os.listdir(where)
        except OSError:
            continue
        for name in names:
            m = TEMP_SUFFIX.search(name)
            path = os.path.join(where, name)
            if m and name[: m.start()] in prefixes and stat.S_ISREG(os.lstat(path).st_mode):
                os.remove(path)
                removed.append(os.path.join(folder, name) if folder else name)
    return {"removed": sorted(removed)}


def partials(root, files):
    """{name: bytes} of the named files' partial data in rsync's partial folders, and every byte held there."""
    found, held = {}, 0
    for folder, _dirs, names in os.walk(root, followlinks=False):
        if os.path.basename(folder) == PARTIAL_DIR:
            held += sum(os.lstat(os.path.join(folder, n)).st_size for n in names)
    for rel in files:
        folder, _, name = rel.rpartition("/")
        path = os.path.join(root, folder, PARTIAL_DIR, name)
        if os.path.isfile(path) and not os.path.islink(path):
            found[rel] = os.path.getsize(path)
    return found, held


def write(args):
    """Write ``text`` to ``path`` through a temporary made in its folder by mkstemp (O_EXCL: a planted
    name is never opened) and a rename over the final name (a symlink there is replaced, not followed)."""
    path = args["path"]
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".seatrial-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(args["text"])
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    return {"written": path}


def _run(argv):
    import subprocess

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


def comparable(m):
    """The parts of a manifest that verification compares (verify.differences on the driver)."""
    files = m.get("files") if isinstance(m.get("files"), dict) else {}
    return {"files": {rel: {"size": (meta or {}).get("size")} for rel, meta in files.items()},
            "links": m.get("links") or {}, "safetensors": m.get("safetensors") or {},
            "index": m.get("index"), "key": m.get("key") or {}}  # fmt: skip


def _synced(model_dir):
    """The manifest a sync wrote into the folder (its comparable parts), None when there is none, or
    ``{"error"}`` when it cannot be read."""
    path = os.path.join(model_dir, MANIFEST)
    if not os.path.lexists(path):
        return None
    try:
        with open(path, "rb") as fh:
            doc = json.load(fh)
        if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
            return {"error": f"{MANIFEST} is not a sync manifest"}
        return comparable(doc)
    except (OSError, ValueError) as exc:
        return {"error": f"{MANIFEST} cannot be read: {exc}"}


def _model(model_dir):
    """The checkpoint as its files are now (key manifest), and the sync manifest beside it."""
    m = manifest({"root": model_dir, "verify": "key"})
    if "error" in m:
        return {"unavailable": m["error"]}
    return {"source": "computed", "key": m["key"], "files": len(m["files"]),
            "total_size": (m.get("index") or {}).get("total_size"), "manifest": comparable(m),
            "synced": _synced(model_dir)}  # fmt: skip


def fingerprint(args):
    import platform

    prefixes = tuple(args.get("env_prefixes") or ())
    env = {k: v for k, v in sorted(os.environ.items()) if prefixes and k.startswith(prefixes)}
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
    if args.get("model_dir"):
        out["model"] = _model(args["model_dir"])
    return out


def prepare(args):
    """Root resolved (``root``, ``kind``: nothing more when it is not a folder or missing), the room there,
    rsync's stale temporaries of the files to send cleared, what root already holds, and the partial data
    of an interrupted run (per file, and all the partial folders hold)."""
    (root, kind), files = _resolved(args["root"]), args.get("files") or []
    if kind not in ("dir", "missing"):
        return {"root": root, "kind": kind}
    here = kind == "dir"
    have = sum(os.lstat(p).st_size for _, p in walk(root)) if here else 0
    removed = clean({"root": root, "files": files})["removed"] if here else []
    found, held = partials(root, files) if here else ({}, 0)
    return {"root": root, "kind": kind, "space": space({"paths": [root]})[root], "removed": removed,
            "have_bytes": have, "partials": found, "partial_bytes": held}  # fmt: skip


ACTIONS = {
    "manifest": manifest,
    "space": space,
    "clean": clean,
    "write": write,
    "prepare": prepare,
    "fingerprint": fingerprint,
}


def run(args):
    """The action's answer; an OSError (a file that cannot be read, a folder that cannot be listed) is
    ``{"error"}``, the caller's to report."""
    try:
        return ACTIONS[args["action"]](args)
    except OSError as exc:
        return {"error": "{}: {}".format(getattr(exc, "filename", "") or "", exc.strerror or exc)}


def main(argv):
    """Arguments: the JSON document after the probe on stdin (``BOOT``), or ``argv[1]``."""
    args = json.loads(argv[1] if len(argv) > 1 else sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
