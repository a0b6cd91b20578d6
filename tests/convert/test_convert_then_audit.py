"""Issue 5's 'done when': the converted seed-000 replica, read back by `seatrial audit`, is what the seed
describes, and its size is what the audit's seed-000 formula predicted from the source."""

from __future__ import annotations

from pathlib import Path

from replica import PLE_SHARDS, convert

from seatrial.checkpoint import audit
from seatrial.checkpoint.conversion import post_conversion_bytes


def test_audit_reads_the_converted_replica_as_the_seed_describes(replica: Path, tmp_path: Path) -> None:
    before = audit(replica)
    predicted = post_conversion_bytes(before)
    result = convert(replica, tmp_path / "dst")
    after = audit(tmp_path / "dst")

    ple = after.component("ple")
    # FP8 with one global BF16 scale of 2 bytes
    assert ple is not None and ple.formats == {"FP8/tensor": ple.params, "BF16": 2}
    assert ple.tensors == PLE_SHARDS + 1  # one output per source shard tensor, plus the BF16 [1] scale
    ple_files = {f.file for f in after.files if "ngram_embedding" in f.file or "ple" in f.file}
    assert len(ple_files) >= PLE_SHARDS  # one file per shard (the scale may sit in its own file)
    lm_head = after.component("lm_head")
    assert lm_head is not None and set(lm_head.formats) == {"BF16"}
    assert not any(f.code == "lm_head_row_scale" for f in after.findings)

    # byte arithmetic: the audit's formula on the source, the converter's total, and the new headers agree
    assert after.total_bytes == result.total_size_after == predicted.total_bytes
    assert before.total_bytes - after.total_bytes == -(
        predicted.ple_delta_bytes + predicted.lm_head_delta_bytes
    )
