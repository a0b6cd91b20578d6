"""``convert_checkpoint``: seed 000's checkpoint surgery, safe to interrupt and resume.

Order: verify and scan the source, write the manifest, link untouched files, write each FP8 table
file, each scale file and each rewritten file (one at a time: temporary, fsync, rename, manifest
update), then config.json and the change log, and the new index last. The source is only read.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import shutil
import time
from pathlib import Path
from typing import NoReturn, Protocol

from seatrial.checkpoint.convert.atomic import DiskFull, fsync_dir, remove_temporaries
from seatrial.checkpoint.convert.finish import edited_config, write_metadata
from seatrial.checkpoint.convert.kernels import kernel
from seatrial.checkpoint.convert.layout import CONFIG_NAME, file_bytes
from seatrial.checkpoint.convert.manifest import (
    CHANGELOG_NAME,
    MANIFEST_NAME,
    Manifest,
    load_manifest,
    save_manifest,
)
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.outputs import OutputRunner
from seatrial.checkpoint.convert.prepare import build_manifest, select, source_files
from seatrial.checkpoint.convert.result import ConvertResult, table_reports
from seatrial.checkpoint.convert.source import INDEX_NAME, SourceCheckpoint, open_source
from seatrial.errors import CheckpointError, ConfigError

_JSON_NAMES = (MANIFEST_NAME, CHANGELOG_NAME, CONFIG_NAME, INDEX_NAME)


class ProgressSink(Protocol):
    """Receives byte progress: a phase with its total, then advances."""

    def phase(self, name: str, total_bytes: int) -> None: ...

    def advance(self, nbytes: int) -> None: ...


class _Quiet:
    def phase(self, name: str, total_bytes: int) -> None:
        return None

    def advance(self, nbytes: int) -> None:
        return None


def convert_checkpoint(opts: ConvertOptions, progress: ProgressSink | None = None) -> ConvertResult:
    """Convert ``opts.src`` into ``opts.dst``; see the module docstring for the order of work."""
    started_ns = time.perf_counter_ns()
    sink = progress or _Quiet()
    source = _open_checked(opts)
    resumed = opts.resume and opts.dst.exists()
    if resumed:
        manifest = _resumable_manifest(source, opts)
    else:
        tables, lm_head = select(source, opts)
        edited_config(source, opts, lm_head.weight.entry.name if lm_head else None)  # its errors before DST
        sink.phase("scan", sum(t.source_bytes for t in tables))
        manifest = build_manifest(source, opts, tables, lm_head, sink.advance)
        _check_free_space(source, manifest, _existing_ancestor(opts.dst))
        _create_destination(opts.dst, manifest)
    removed = remove_temporaries(opts.dst, _JSON_NAMES)
    runner = OutputRunner(source, opts, manifest, sink.advance)
    sink.phase("convert", runner.total_bytes())
    current = "outputs"
    try:
        for record in runner.ordered():
            current = record.file
            runner.run(record)
        current = f"{CONFIG_NAME}, {CHANGELOG_NAME} and {INDEX_NAME}"
        changes = write_metadata(source, opts, manifest)
        fsync_dir(opts.dst)
    except (DiskFull, OSError) as exc:
        _stop(opts.dst, manifest, exc, current)
    manifest.complete, manifest.resume_from, manifest.last_error = True, None, None
    save_manifest(opts.dst, manifest)
    return ConvertResult(
        src=str(opts.src),
        dst=str(opts.dst),
        resumed=resumed,
        total_size_before=manifest.total_size_before,
        total_size_after=manifest.total_size_after,
        tables=table_reports(manifest, opts.fidelity_row_stride),
        lm_head=manifest.lm_head,
        config_changes=changes,
        files=runner.counts,
        removed_temporaries=removed,
        elapsed_ms=(time.perf_counter_ns() - started_ns) / 1e6,
        peak_rss_bytes=peak_rss_bytes(),
        kernel=kernel(),
    )


def peak_rss_bytes() -> int:
    """This process's peak resident set: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``, which keeps
    the parent's peak across fork+exec); ``ru_maxrss`` where /proc is absent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _open_checked(opts: ConvertOptions) -> SourceCheckpoint:
    if not opts.src.is_dir():
        raise CheckpointError(opts.src, "source checkpoint directory does not exist")
    src, dst = opts.src.resolve(), opts.dst.resolve()
    if dst == src or src in dst.parents:
        raise ConfigError(f"DST {opts.dst} must not be the source or lie inside it")
    if opts.dst.exists() and not opts.resume:
        raise ConfigError(f"DST {opts.dst} already exists; pass --resume to continue a conversion there")
    return open_source(opts.src)


def _resumable_manifest(source: SourceCheckpoint, opts: ConvertOptions) -> Manifest:
    """The manifest of the interrupted run, if it was made from this source with these options."""
    manifest = load_manifest(opts.dst)
    if manifest.options != opts.fingerprint():
        raise ConfigError(f"--resume: {opts.dst} was started with other options: {manifest.options}")
    if manifest.source_files != source_files(source):
        raise CheckpointError(opts.src, "--resume: the source changed since the manifest was written")
    return manifest


def _check_free_space(source: SourceCheckpoint, manifest: Manifest, where: Path) -> None:
    """Refuse to start when DST's filesystem cannot hold the new files (links cost nothing there)."""
    needed = sum(file_bytes(o.tensors) for o in manifest.outputs if o.kind != "link")
    same_fs = source.root.stat().st_dev == where.stat().st_dev
    if not same_fs:
        needed += sum((source.root / o.file).stat().st_size for o in manifest.outputs if o.kind == "link")
    free = shutil.disk_usage(where).free
    if free < needed:
        raise CheckpointError(where, f"needs {needed} bytes for DST, only {free} free")


def _create_destination(dst: Path, manifest: Manifest) -> None:
    """DST appears with its manifest already inside (staged, then renamed): never without one."""
    staging = dst.with_name(f".{dst.name}.seatrial-new")
    shutil.rmtree(staging, ignore_errors=True)  # left by a run killed right here
    staging.mkdir(parents=True)
    save_manifest(staging, manifest)
    staging.rename(dst)


def _existing_ancestor(path: Path) -> Path:
    return next(p for p in path.absolute().parents if p.exists())


def _stop(dst: Path, manifest: Manifest, exc: OSError | DiskFull, current: str) -> NoReturn:
    """Record where to resume (best effort: the disk may be full) and raise a clear error.

    ``current`` names what was being written (an output file of DST, or the final metadata).
    """
    if isinstance(exc, OSError) and exc.errno != errno.ENOSPC:
        raise CheckpointError(dst, f"cannot write {current}: {exc.strerror or exc}") from None
    manifest.resume_from, manifest.last_error = current, f"{current}: disk full"
    with contextlib.suppress(OSError):
        save_manifest(dst, manifest)
    raise CheckpointError(
        dst,
        f"disk full while writing {current}; its partial temporary was removed; "
        f"free space and rerun with --resume ({MANIFEST_NAME} resumes there)",
    ) from None
