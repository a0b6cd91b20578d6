"""What ``--resume`` decides from: each stage's fingerprint moves with the plan keys it reads and with the
stages it reads, and no other; an edit is named by key (a candidate by its name); no env value is kept."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.trial.plans import synthetic_plan

from seatrial.trial.plan import STAGES, TrialPlan
from seatrial.trial.state import changes, fingerprints, plan_doc

CKPT = Path("/nonexistent/ckpt")  # the plan names it; nothing here reads it


def _moved(edit: dict[str, object] | None = None, **over: object) -> list[str]:
    base = synthetic_plan(CKPT)
    changed = copy.deepcopy(base) | over
    for dotted, value in (edit or {}).items():
        node = changed
        *path, last = dotted.split(".")
        for part in path:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    a, b = (fingerprints(plan_doc(TrialPlan.model_validate(p))) for p in (base, changed))
    return [s for s in STAGES if a[s] != b[s]]


def test_each_edit_moves_the_stages_that_read_it_and_those_after_that_read_them() -> None:
    assert _moved() == []
    assert _moved({"profiles.0.peak_req_s": 80}) == ["decision"]  # the search does not read the peak
    assert _moved({"deployment.gpu_hour_usd": 3.0}) == ["decision"]
    assert _moved({"profiles.0.slo": {"ttft_ms": 90}}) == ["capacity", "decision"]
    assert _moved({"stages.io": {"repeats": 5}}) == ["io"]
    assert _moved({"stages.hardware": {"duration_s": 2}}) == ["hardware", "serving", "capacity", "decision"]
    assert _moved({"stages.serving": {"trials": ["basic"]}}) == ["serving", "capacity", "decision"]
    assert _moved({"candidates.0.args": ["--batch-slots", "3"]}) == ["serving", "capacity", "decision"]
    assert _moved({"candidates.0.plan": {"max_model_len": 512}}) == ["checkpoint", "serving", "capacity", "decision"]
    assert _moved({"deployment.nodes": ["local:/tmp/replica"]}) == ["hardware", "io", "fleet", "serving", "capacity",
                                                                   "decision"]  # fmt: skip


def test_an_edit_is_named_by_key_and_a_candidate_by_its_name() -> None:
    old = plan_doc(TrialPlan.model_validate(synthetic_plan(CKPT)))
    plan = synthetic_plan(CKPT)
    plan["candidates"] = list(reversed(plan["candidates"]))  # order alone is no edit
    plan["candidates"][0]["args"] = ["--batch-slots", "9"]  # misfit, now first
    plan["profiles"][0]["peak_req_s"] = 70
    new = plan_doc(TrialPlan.model_validate(plan))
    assert changes(old, new) == ["candidates[misfit].args", "profiles[chat].peak_req_s"]


def test_no_env_value_is_kept_only_its_digest_and_a_changed_secret_still_moves_the_stage() -> None:
    plan = synthetic_plan(CKPT)
    plan["serve"]["env"] = {"HF_TOKEN": "hf_live_secret_value"}
    doc = plan_doc(TrialPlan.model_validate(plan))
    assert "hf_live_secret_value" not in str(doc) and doc["serve"]["env"]["HF_TOKEN"].startswith("sha256:")
    plan["serve"]["env"] = {"HF_TOKEN": "hf_other"}
    other = plan_doc(TrialPlan.model_validate(plan))
    assert changes(doc, other) == ["serve.env.HF_TOKEN"]
    assert fingerprints(doc)["serving"] != fingerprints(other)["serving"]
