"""``seatrial sync SRC DEST...``: one verified checkpoint on every node (seed 000: rsync over SSH with the
independent shards sent in parallel, then apparent bytes, file counts and SHA-256 compared on both sides).

Per destination: its path resolved there (``~`` and a relative path, once, for rsync and the probe
alike) as room and rights are checked first (the probe, one call), rsync's stale temporaries of the files to send
cleared (nothing else), the plan's small files sent first and then the shards over N streams (a
stream holding a file with partial data from an interrupted run continues from it); then both sides'
manifests are computed at once (``full``: every byte hashed in parallel threads on each side) and
compared. A file the comparison finds different is sent once more regardless of its size and time
(rsync's quick check would skip it) and compared again. Only a destination found identical gets the
source manifest with the verdict, as ``.seatrial-manifest.json``. A destination that cannot be reached,
fills up or refuses a write fails alone; the others go on.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from seatrial.errors import CheckpointError, ConfigError, SeatrialError, ServerError
from seatrial.fleet.nodes import Place, Ssh, parse_place, run_probe
from seatrial.fleet.probe import MANIFEST
from seatrial.fleet.rsync import Stream, Transfer, unreachable
from seatrial.fleet.transfer import plan_transfer
from seatrial.fleet.verify import compared, differences, index_check, printable, resend
from seatrial.interrupts import terminations_interrupt
from seatrial.jsonio import dumps
from seatrial.runs.summaries.fleet import SyncDestination, SyncSummary, TransferPlan

Verify = Literal["key", "full"]
OnProgress = Callable[[str, list[Stream]], None]


def source_manifest(src: Path, verify: Verify, ssh: Ssh) -> dict[str, Any]:
    """SRC's manifest; a checkpoint (it holds safetensors) is first checked by the one resolver and
    header reader, so that a hostile index never reaches rsync. A name that is not UTF-8 is refused by
    name (it could not be written into the manifest or the report)."""
    if not src.is_dir():
        raise ConfigError(f"SRC {src}: not a folder")
    root = str(src.resolve())
    manifest = run_probe(Place(None, root), {"action": "manifest", "root": root, "verify": verify}, ssh)
    if "error" in manifest:
        raise ConfigError(f"SRC {src}: {manifest['error']}")
    for rel in [*manifest["files"], *manifest.get("links", {}), *manifest.get("other", [])]:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                f"SRC {src}: the file name {src.as_posix()}/{rel.encode('utf-8', 'surrogateescape')!r} is not "
                "UTF-8; rename it (or move it out of SRC) and run again"
            ) from None
    if manifest.get("safetensors"):
        from seatrial.checkpoint.index import list_files

        list_files(src)
        bad = index_check(manifest)
        if bad:
            raise CheckpointError(src, "; ".join(bad))
    return dict(manifest)


def _streams(plan: dict[str, Any], manifest: dict[str, Any], partial: dict[str, int]) -> list[Stream]:
    """The plan's streams; the small files and symlinks lead the first one's list (rsync sends in list
    order), so the node is recognisably this model before its shards are. A stream with a file that has
    partial data from an interrupted run resumes from it (no ``-W``)."""
    files = manifest["files"]
    linked = {r for group in plan["hardlink_groups"] for r in group}
    sparse = set(plan["sparse"])

    def stream(name: str, names: list[str]) -> Stream:
        total = sum(files[r]["size"] for r in names if r in files)
        return Stream(name, names, total, hardlinks=bool(linked & set(names)), sparse=bool(sparse & set(names)),
                      resume=any(r in partial for r in names))  # fmt: skip

    lists = [s["files"] for s in plan["streams"]] or [[]]
    lists[0] = plan["first"]["files"] + plan.get("links", []) + lists[0]
    return [stream(f"stream {i + 1}", names) for i, names in enumerate(lists) if names]


def _precheck(ready: dict[str, Any], need: int, dest: Place) -> str | None:
    """Why a destination (the probe's ``prepare``) cannot take ``need`` bytes, or None."""
    room = ready["space"]
    if not room["writable"]:
        return f"permission denied: {room['checked']} is not writable"
    if room["free_bytes"] < need:
        why = f"disk full: {need:,} bytes to send, {room['free_bytes']:,} free at {room['checked']}"
        held = ready.get("partial_bytes") or 0
        if held:
            why += (f"; {held:,} bytes of that are partial files an interrupted sync left in .rsync-partial "
                    f"folders under {dest.path}: remove them (find {dest.path} -name .rsync-partial -prune "
                    "-exec rm -r {} +) to start those files afresh, or free more space")  # fmt: skip
        return why
    return None


def _stream_rows(streams: list[Stream]) -> list[dict[str, Any]]:
    return [{"name": s.name, "files": len(s.files), "bytes": s.total_bytes, "done_bytes": s.done_bytes,
             "sent_bytes": s.sent_bytes, "literal_bytes": s.literal_bytes, "resumed": s.resume, "mb_s": s.mb_s,
             "attempts": s.attempts, "rc": s.rc, "error": s.error} for s in streams]  # fmt: skip


class _Failed(Exception):
    """A destination's own failure: its row says what, the others go on."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields


def _send(transfer: Transfer, streams: list[Stream], row: dict[str, Any]) -> None:
    done = transfer.run(streams)
    row.setdefault("streams", []).extend(_stream_rows(done))
    failed = [s for s in done if s.rc != 0]
    if failed:
        raise _Failed({"error": f"{failed[0].name}: {failed[0].error}", "stage": "transfer",
                       "unreachable": unreachable(failed[0])})  # fmt: skip


def _not_a_folder(dest: Place, answer: dict[str, Any]) -> None:
    """ConfigError (exit 2) when the probe found something other than a folder at the destination."""
    if answer.get("kind") not in ("dir", "missing", None):
        raise ConfigError(f"{dest}: {answer['root']} is a {answer['kind']}, not a folder")


def _verified(dest: Place, verify: Verify, ssh: Ssh) -> dict[str, Any]:
    theirs = printable(run_probe(dest, {"action": "manifest", "root": dest.path, "verify": verify}, ssh))
    if "error" in theirs:
        _not_a_folder(dest, theirs)
        raise _Failed({"error": theirs["error"], "stage": "verify"})
    return dict(theirs)


def sync_one(src: Path, dest: Place, manifest: dict[str, Any], plan: dict[str, Any], verify: Verify, ssh: Ssh,
             check_only: bool, on_progress: OnProgress, reference: Future[Any],
             bwlimit_mb_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Transfer (unless ``check_only``) and verify one destination; never raises for its own failures.
    ``reference`` is the source manifest to verify against (the ``full`` one is hashed while this runs)."""
    started = time.monotonic()
    row: dict[str, Any] = {"dest": str(dest), "ok": False}
    try:
        if not check_only:
            names = [*manifest["files"], *plan.get("links", [])]
            ready = run_probe(dest, {"action": "prepare", "root": dest.path, "files": names}, ssh)
            if "error" in ready:
                raise _Failed({"error": ready["error"], "stage": "check"})
            _not_a_folder(dest, ready)
            dest = replace(dest, path=ready["root"], spec=str(dest))  # one folder for rsync and the probe
            row["path"] = dest.path
            need = max(0, plan["travel_bytes"] - ready["have_bytes"])
            if (why := _precheck(ready, need, dest)) is not None:
                return row | {"error": why, "stage": "check"}
            row.update(cleared=ready["removed"], partial_bytes=sum(ready["partials"].values()))
            transfer = Transfer(src, dest, ssh, lambda s: on_progress(str(dest), s), bwlimit_mb_s)
            _send(transfer, _streams(plan, manifest, ready["partials"]), row)
            row["transfer_s"] = round(time.monotonic() - started, 2)
        verified_at = time.monotonic()
        theirs = _verified(dest, verify, ssh)
        source = reference.result()
        diffs = differences(source, theirs)
        again = resend(source, theirs) if diffs and not check_only else []
        if again:  # rsync's size+time check skips a file whose bytes alone changed: send it regardless
            files = source["files"]
            transfer = Transfer(src, dest, ssh, lambda s: on_progress(str(dest), s), bwlimit_mb_s)
            _send(
                transfer,
                [Stream("resend", again, sum(files[r]["size"] for r in again), ignore_times=True)],
                row,
            )
            row["resent"] = again
            theirs = _verified(dest, verify, ssh)
            diffs = differences(source, theirs)
        row.update(ok=not diffs, differences=diffs, verify_s=round(time.monotonic() - verified_at, 2),
                   **compared(source, verify))  # fmt: skip
        if not check_only and not diffs:
            record = {**source, "verified": {"dest": str(dest), "verify": verify, "differences": [],
                                            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}  # fmt: skip
            path = f"{dest.path.rstrip('/')}/{MANIFEST}"
            run_probe(dest, {"action": "write", "path": path, "text": dumps(record).decode()}, ssh)
    except _Failed as failed:
        row.update(failed.fields)
    except ConfigError as exc:
        row.update(error=str(exc), stage="check", bad_input=True)
    except SeatrialError as exc:
        row.update(error=str(exc), stage=row.get("stage", "reach"), unreachable=isinstance(exc, ServerError))
    except KeyboardInterrupt:
        row.update(error="interrupted; run again to continue where it stopped", stage="transfer")
        raise
    return row


def sync(src: Path, dests: list[str], *, streams: int | None = None, verify: Verify = "key", ssh: Ssh | None = None,
         check_only: bool = False, on_progress: OnProgress | None = None,
         bwlimit_mb_s: float | None = None) -> SyncSummary:  # fmt: skip
    """Every destination in turn (their streams run at once); the summary with the plan and each result.
    SIGTERM and SIGHUP stop it as Ctrl-C does (every rsync stream stopped, partial data kept)."""
    places = [parse_place(d) for d in dests]
    for place in places:
        _not_nested(src, place)
    control = tempfile.TemporaryDirectory(prefix="seatrial-ssh-")
    ssh = replace(ssh or Ssh(), control_dir=Path(control.name))
    try:
        with terminations_interrupt():
            return _sync(src, places, streams, verify, ssh, check_only, on_progress, bwlimit_mb_s)
    finally:
        ssh.close([p.host for p in places if p.host])
        control.cleanup()


def _sync(src: Path, places: list[Place], streams: int | None, verify: Verify, ssh: Ssh, check_only: bool,
          on_progress: OnProgress | None, bwlimit_mb_s: float | None) -> SyncSummary:  # fmt: skip
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
    return SyncSummary(src=str(src), verify=verify, check_only=check_only, plan=TransferPlan(**plan),
                       destinations=[SyncDestination(**r) for r in results], manifest=full,
                       elapsed_s=round(time.monotonic() - started, 2), ok=all(r["ok"] for r in results))  # fmt: skip


def _not_nested(src: Path, dest: Place) -> None:
    """ConfigError (exit 2) for a local DEST that is SRC or lies inside it (rsync would copy SRC into itself,
    and again on every run), or that holds SRC (the sync would replace its own source), as convert refuses."""
    if not dest.local:
        return
    here, there = src.resolve(), Path(dest.path).expanduser().resolve()
    if there == here or here in there.parents:
        raise ConfigError(f"DEST {dest} must not be SRC or lie inside it")
    if there in here.parents:
        raise ConfigError(f"DEST {dest} holds SRC {src}: a sync there would replace its own source")


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future
