"""``seatrial sync SRC DEST...``: one verified checkpoint on every node (seed 000: rsync over SSH with the
independent shards sent in parallel, then apparent bytes, file counts and SHA-256 compared on both sides).

Per destination: room and rights checked first (the probe), rsync's stale temporaries from a killed
run cleared, the plan's small files sent first and then the shards over N streams; then both sides'
manifests are computed at once (``full``: every byte hashed in parallel threads on each side) and
compared. The source manifest with the verdict is written into DEST as ``.seatrial-manifest.json``.
A destination that cannot be reached, fills up or refuses a write fails alone; the others go on.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from seatrial.errors import CheckpointError, ConfigError, SeatrialError
from seatrial.fleet.nodes import Place, Ssh, parse_place, run_probe
from seatrial.fleet.probe import MANIFEST
from seatrial.fleet.rsync import Stream, Transfer
from seatrial.fleet.syncplan import plan_transfer
from seatrial.fleet.verify import differences, index_check
from seatrial.jsonio import dumps

Verify = Literal["key", "full"]
OnProgress = Callable[[str, list[Stream]], None]


def source_manifest(src: Path, verify: Verify, ssh: Ssh) -> dict[str, Any]:
    """SRC's manifest; a checkpoint (it holds safetensors) is first checked by the one resolver and
    header reader, so that a hostile index never reaches rsync."""
    if not src.is_dir():
        raise ConfigError(f"SRC {src}: not a folder")
    manifest = run_probe(
        Place(None, str(src.resolve())),
        {"action": "manifest", "root": str(src.resolve()), "verify": verify},
        ssh,
    )
    if manifest.get("safetensors"):
        from seatrial.checkpoint.index import list_files

        list_files(src)
        bad = index_check(manifest)
        if bad:
            raise CheckpointError(src, "; ".join(bad))
    return dict(manifest)


def _streams(plan: dict[str, Any], manifest: dict[str, Any]) -> list[Stream]:
    """The plan's streams; the small files lead the first one's list (rsync sends in list order), so the
    node is recognisably this model before its shards are."""
    files = manifest["files"]
    linked = {r for group in plan["hardlink_groups"] for r in group}
    sparse = set(plan["sparse"])

    def stream(name: str, names: list[str]) -> Stream:
        total = sum(files[r]["size"] for r in names)
        return Stream(
            name, names, total, hardlinks=bool(linked & set(names)), sparse=bool(sparse & set(names))
        )

    lists = [s["files"] for s in plan["streams"]] or [[]]
    lists[0] = plan["first"]["files"] + lists[0]
    return [stream(f"stream {i + 1}", names) for i, names in enumerate(lists) if names]


def _precheck(room: dict[str, Any], need: int) -> str | None:
    """Why a destination with ``room`` (the probe's ``space``) cannot take ``need`` bytes, or None."""
    if not room["writable"]:
        return f"permission denied: {room['checked']} is not writable"
    if room["free_bytes"] < need:
        return f"disk full: {need:,} bytes to send, {room['free_bytes']:,} free at {room['checked']}"
    return None


def _stream_rows(streams: list[Stream]) -> list[dict[str, Any]]:
    return [{"name": s.name, "files": len(s.files), "bytes": s.total_bytes, "done_bytes": s.done_bytes,
             "mb_s": s.mb_s, "attempts": s.attempts, "rc": s.rc, "error": s.error} for s in streams]  # fmt: skip


def sync_one(src: Path, dest: Place, manifest: dict[str, Any], plan: dict[str, Any], verify: Verify, ssh: Ssh,
             check_only: bool, on_progress: OnProgress, reference: Future[Any],
             bwlimit_mb_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Transfer (unless ``check_only``) and verify one destination; never raises for its own failures.
    ``reference`` is the source manifest to verify against (the ``full`` one is hashed while this runs)."""
    started = time.monotonic()
    row: dict[str, Any] = {"dest": str(dest), "ok": False}
    try:
        if not check_only:
            ready = run_probe(dest, {"action": "prepare", "root": dest.path}, ssh)
            if (
                why := _precheck(ready["space"], max(0, plan["travel_bytes"] - ready["have_bytes"]))
            ) is not None:
                return row | {"error": why, "stage": "check"}
            row["cleared"] = ready["removed"]
            transfer = Transfer(src, dest, ssh, lambda s: on_progress(str(dest), s), bwlimit_mb_s)
            done = transfer.run(_streams(plan, manifest))
            row["streams"] = _stream_rows(done)
            row["transfer_s"] = round(time.monotonic() - started, 2)
            failed = [s for s in done if s.rc != 0]
            if failed:
                return row | {"error": f"{failed[0].name}: {failed[0].error}", "stage": "transfer"}
        verified_at = time.monotonic()
        theirs = run_probe(dest, {"action": "manifest", "root": dest.path, "verify": verify}, ssh)
        if "error" in theirs:
            return row | {"error": theirs["error"], "stage": "verify"}
        manifest = reference.result()
        diffs = differences(manifest, theirs)
        row.update(ok=not diffs, differences=diffs, verify_s=round(time.monotonic() - verified_at, 2))
        if not check_only:
            record = {**manifest, "verified": {"dest": str(dest), "verify": verify, "differences": diffs,
                                              "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}  # fmt: skip
            run_probe(
                dest,
                {
                    "action": "write",
                    "path": f"{dest.path.rstrip('/')}/{MANIFEST}",
                    "text": dumps(record).decode(),
                },
                ssh,
            )
    except SeatrialError as exc:
        row.update(
            error=str(exc), stage=row.get("stage", "reach"), unreachable="cannot be reached" in str(exc)
        )
    except KeyboardInterrupt:
        row.update(error="interrupted; run again to continue where it stopped", stage="transfer")
        raise
    return row


def sync(src: Path, dests: list[str], *, streams: int | None = None, verify: Verify = "key", ssh: Ssh | None = None,
         check_only: bool = False, on_progress: OnProgress | None = None,
         bwlimit_mb_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Every destination in turn (their streams run at once); the summary with the plan and each result."""
    control = tempfile.TemporaryDirectory(prefix="seatrial-ssh-")
    ssh = replace(ssh or Ssh(), control_dir=Path(control.name))
    places = [parse_place(d) for d in dests]
    try:
        return _sync(src, places, streams, verify, ssh, check_only, on_progress, bwlimit_mb_s)
    finally:
        ssh.close([p.host for p in places if p.host])
        control.cleanup()


def _sync(src: Path, places: list[Place], streams: int | None, verify: Verify, ssh: Ssh, check_only: bool,
          on_progress: OnProgress | None, bwlimit_mb_s: float | None) -> dict[str, Any]:  # fmt: skip
    started = time.monotonic()
    manifest = source_manifest(src, "key", ssh)
    plan = plan_transfer(manifest, streams)
    root = str(src.resolve())
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the source's full hash runs beside the transfers (and beside each destination's own hashing)
        reference: Future[Any] = (
            pool.submit(run_probe, Place(None, root), {"action": "manifest", "root": root, "verify": "full"}, ssh)
            if verify == "full" else _done(manifest)
        )  # fmt: skip
        progress = on_progress or (lambda d, s: None)
        results = [
            sync_one(src, p, manifest, plan, verify, ssh, check_only, progress, reference, bwlimit_mb_s)
            for p in places
        ]
        full = reference.result()
    return {"src": str(src), "verify": verify, "check_only": check_only, "plan": plan, "destinations": results,
            "manifest": full, "elapsed_s": round(time.monotonic() - started, 2),
            "ok": all(r["ok"] for r in results)}  # fmt: skip


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def exit_code(summary: dict[str, Any]) -> int:
    """0 when every destination is the source, 4 when one could not be reached, else 1."""
    if summary["ok"]:
        return 0
    return 4 if any(r.get("unreachable") for r in summary["destinations"]) else 1
