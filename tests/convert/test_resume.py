"""Interrupted runs, --resume, and a full disk: the end result is byte-identical to a clean run."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from replica import convert, tree_bytes

from seatrial.checkpoint.convert import finish, prepare, stio, tasks
from seatrial.checkpoint.convert.manifest import MANIFEST_NAME, load_manifest
from seatrial.errors import CheckpointError, ConfigError

TABLE_FILE = "model-ple-ple_embedding-ngram_embedding-{:05d}-of-00008.safetensors"


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, shards_done: int) -> None:
    original = tasks.TableWriter.write_shard
    calls = {"n": 0}

    def flaky(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if calls["n"] == shards_done:
            raise RuntimeError("simulated crash")
        calls["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tasks.TableWriter, "write_shard", flaky)


def test_resume_after_interrupt_is_byte_identical(
    replica: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert(replica, tmp_path / "clean")
    dst = tmp_path / "resumed"
    _interrupt_after(monkeypatch, 3)
    with pytest.raises(RuntimeError):
        convert(replica, dst)
    monkeypatch.undo()
    manifest = load_manifest(dst)
    done = [o.file for o in manifest.outputs if o.kind == "table" and o.status == "done"]
    assert done == [TABLE_FILE.format(i) for i in (1, 2, 3)]
    assert not list(dst.glob(".seatrial-tmp-*"))  # the interrupted temporary was removed
    assert not (dst / "model.safetensors.index.json").exists()  # the index comes last
    (dst / f".seatrial-tmp-{TABLE_FILE.format(4)}").write_bytes(b"partial")  # as kill -9 would leave it

    def no_rescan(*args: object) -> float:
        raise AssertionError("--resume must take the global max from the manifest")

    monkeypatch.setattr(prepare, "scan_max_abs", no_rescan)
    result = convert(replica, dst, resume=True)
    monkeypatch.undo()
    assert result.resumed and result.removed_temporaries == [f".seatrial-tmp-{TABLE_FILE.format(4)}"]
    assert result.files["table"] == 5 and result.files["skipped"] == 3 + 2  # 3 shards + 2 links
    assert tree_bytes(dst) == tree_bytes(tmp_path / "clean")
    assert result.tables[0].fidelity == convert(replica, tmp_path / "again").tables[0].fidelity


def test_resume_redoes_an_output_whose_hash_no_longer_matches(replica: Path, tmp_path: Path) -> None:
    dst = tmp_path / "dst"
    convert(replica, dst)
    clean = tree_bytes(dst)
    victim = dst / TABLE_FILE.format(2)
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    result = convert(replica, dst, resume=True)
    assert result.files["table"] == 1 and result.files["rewrite"] == 0
    assert tree_bytes(dst) == clean


def test_resume_refuses_other_options_or_a_changed_source(replica: Path, tmp_path: Path) -> None:
    dst = tmp_path / "dst"
    convert(replica, dst)
    with pytest.raises(ConfigError, match="other options"):
        convert(replica, dst, resume=True, shards=2)
    (replica / "tokenizer.json").write_text("{}")
    with pytest.raises(CheckpointError, match="source changed"):
        convert(replica, dst, resume=True)


def test_resume_into_a_foreign_directory_is_refused(replica: Path, tmp_path: Path) -> None:
    (tmp_path / "dst").mkdir()
    with pytest.raises(CheckpointError, match=MANIFEST_NAME):
        convert(replica, tmp_path / "dst", resume=True)


def test_full_disk_removes_the_temporary_and_says_where_to_resume(
    replica: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    convert(replica, tmp_path / "clean")
    dst = tmp_path / "dst"
    original = stio.HashingWriter.write

    def write(self, data):  # type: ignore[no-untyped-def]
        if self.written_bytes > 0 and self._fh.name.endswith(TABLE_FILE.format(6)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, data)

    monkeypatch.setattr(stio.HashingWriter, "write", write)
    with pytest.raises(CheckpointError, match=r"disk full while writing .*00006-of-00008.*--resume"):
        convert(replica, dst)
    monkeypatch.undo()
    assert not list(dst.glob(".seatrial-tmp-*"))
    manifest = load_manifest(dst)
    assert manifest.resume_from == TABLE_FILE.format(6)
    assert "disk full" in (manifest.last_error or "")
    result = convert(replica, dst, resume=True)
    assert result.files["skipped"] == 5 + 2
    assert tree_bytes(dst) == tree_bytes(tmp_path / "clean")


def test_full_disk_while_writing_metadata_is_a_clear_error(
    replica: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: Path, obj: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(finish, "write_public_json", full)
    with pytest.raises(CheckpointError, match=r"disk full while writing config\.json, .* --resume"):
        convert(replica, tmp_path / "dst")
    monkeypatch.undo()
    assert not (tmp_path / "dst" / "model.safetensors.index.json").exists()
    result = convert(replica, tmp_path / "dst", resume=True)
    assert result.files["skipped"] == 12
    assert (tmp_path / "dst" / "model.safetensors.index.json").is_file()


def test_manifest_records_xxh3_128_digest_of_each_written_output(replica: Path, tmp_path: Path) -> None:
    import xxhash

    dst = tmp_path / "dst"
    convert(replica, dst)
    manifest = load_manifest(dst)
    assert manifest.format == "seatrial-convert/2" and manifest.digest_algorithm == "xxh3_128"
    written = [o for o in manifest.outputs if o.kind != "link"]
    assert len(written) == 8 + 2  # 8 table shards, the scale file, the rewritten lm_head file
    for record in written:
        assert record.digest == xxhash.xxh3_128((dst / record.file).read_bytes()).hexdigest(), record.file


def test_resume_refuses_a_format_1_sha256_manifest_clearly(replica: Path, tmp_path: Path) -> None:
    import json

    dst = tmp_path / "dst"
    convert(replica, dst)
    raw = json.loads((dst / MANIFEST_NAME).read_text())
    raw["format"] = "seatrial-convert/1"
    del raw["digest_algorithm"]
    for record in raw["outputs"]:
        record["sha256"] = record.pop("digest")
    (dst / MANIFEST_NAME).write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match=r"'seatrial-convert/1' is not 'seatrial-convert/2'.*new DST"):
        convert(replica, dst, resume=True)
