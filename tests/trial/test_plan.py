"""``seatrial trial``'s plan: the example runs as it is; a hostile or malformed plan is exit 2 naming the key
and what it expected, before any folder is written or any server started."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ckptgen.tiny import write_tiny_checkpoint
from tests.clirun import invoke
from tests.trial.plans import synthetic_plan, write_plan

from seatrial.trial.plan import TrialPlan, load_plan


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("trial-plan") / "ckpt")


def test_the_example_plan_is_a_valid_plan_for_vllm_cpu(tmp_path: Path) -> None:
    got = invoke(["trial", "--example"])
    assert got.code == 0, got.output
    plan = load_plan(write_plan(tmp_path / "p.yaml", yaml.safe_load(got.output)))
    assert plan.deployment.tiny_model and [c.name for c in plan.candidates] == ["seqs-2", "seqs-8"]
    assert "vllm.entrypoints.openai.api_server" in plan.serve.command and "{model}" in plan.serve.command
    assert plan.serve.guard is not None  # every start under seatrial guard
    assert "# " in got.output  # commented


def _edit(plan: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(plan)
    *path, last = dotted.split(".")
    node: Any = out
    for part in path:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return out


HOSTILE = [
    ("deployment.tiny_model", True, "not both"),
    ("candidates.1.name", "two", "candidate names must differ: two twice"),
    ("candidates.0.name", "../../etc", "candidates.0.name"),
    ("serve.command", ["server", "--port", "{port}"], "must contain {model}"),
    ("serve.command", ["server", "{model}"], "must contain {port}"),
    ("serve.stop_grace_s", 5, "must exceed guard.stop_grace"),
    ("profiles.0.workload", {"rate": 3}, "the capacity stage sets the load"),
    ("profiles.0.slo", {"ttft": 5}, "unknown SLO metric"),
    ("profiles.0.peak_req_s", -1, "profiles.0.peak_req_s"),
    ("stages.run", ["checkpoint", "warp"], "stages.run.1"),
    ("candidates.0.convert", {"dst": "/etc"}, "the trial sets these itself"),
    ("candidates.0.plan", {"tensor_parallel_size": 0}, "candidates.0.plan.tensor_parallel_size"),
    ("deployment.nodes", [], "give at least one node"),
    ("deployment.secret", "x", "deployment.secret"),
    ("stages.capacity.confidence", 1.5, "stages.capacity.confidence"),
    # the search's own rules at load (they failed only when stage 5 began, after every earlier stage had run)
    ("stages.capacity.time_budget", "soon", "time_budget: --time-budget: 'soon' is not a duration"),
    ("stages.capacity.min_rate", 400, "min_rate 400 is above the first probe"),
]


@pytest.mark.parametrize(("key", "value", "said"), HOSTILE, ids=[f"{h[0]}={h[1]!r}"[:40] for h in HOSTILE])
def test_a_bad_plan_is_exit_2_naming_the_key_before_any_folder(
    ckpt: Path, tmp_path: Path, key: str, value: Any, said: str
) -> None:
    path = write_plan(tmp_path / "p.yaml", _edit(synthetic_plan(ckpt), key, value))
    got = invoke(["trial", str(path), "--out", str(tmp_path / "out")])
    assert got.code == 2 and said in got.output and "Traceback" not in got.output, got.output
    assert not (tmp_path / "out").exists()


LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize("text", ["- a list\n", "deployment: [1, 2\n", "", "a: &x [*x]\n", LAUGHS],
                         ids=["list", "broken", "empty", "alias-cycle", "billion-laughs"])
def test_a_file_that_is_no_plan_is_exit_2(tmp_path: Path, text: str) -> None:
    """An alias cycle walked the depth check forever and 9^9 shared nodes took minutes: both are exit 2 now."""
    (tmp_path / "p.yaml").write_text(text)
    got = invoke(["trial", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "out")])
    assert got.code == 2 and "p.yaml" in got.output, got.output


def test_flags_that_name_no_stage_or_no_trial_are_exit_2(ckpt: Path, tmp_path: Path) -> None:
    path = write_plan(tmp_path / "p.yaml", synthetic_plan(ckpt))
    for args, said in (
        (["--only", "warp"], "--only: unknown stage 'warp'"),
        (["--until", "nowhere"], "--until: unknown stage 'nowhere'"),
        (["--resume"], "holds no trial"),
    ):
        got = invoke(["trial", str(path), "--out", str(tmp_path / "out"), *args])
        assert got.code == 2 and said in got.output, got.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    got = invoke(["trial", str(path), "--out", str(tmp_path / "full")])
    assert got.code == 2 and "pass --resume" in got.output and (tmp_path / "full" / "notes.txt").read_text() == "mine"
    got = invoke(["trial"])
    assert got.code == 2 and "--example" in got.output


def test_a_missing_checkpoint_folder_is_exit_2(tmp_path: Path) -> None:
    path = write_plan(tmp_path / "p.yaml", synthetic_plan(tmp_path / "nowhere"))
    got = invoke(["trial", str(path), "--out", str(tmp_path / "out")])
    assert got.code == 2 and "deployment.checkpoint" in got.output, got.output


def test_every_default_is_stated_in_the_plan_model(ckpt: Path) -> None:
    plan = TrialPlan.model_validate(synthetic_plan(ckpt) | {"stages": {}})
    assert plan.stages.run == ["checkpoint", "hardware", "io", "fleet", "serving", "capacity", "decision"]
    assert plan.stages.capacity.starts == 2 and plan.stages.io.trials == ["storage.read", "storage.write", "storage.load"]


def test_the_readme_s_plan_for_an_8_gpu_node_is_a_valid_plan() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### `seatrial trial`"):]
    doc = yaml.safe_load(section[section.index("```yaml") + 7 : section.index("```", section.index("```yaml") + 7)])
    plan = TrialPlan.model_validate(doc)
    assert plan.deployment.ssh_hosts == ["gpu-a", "gpu-b"] and [c.gpus for c in plan.candidates] == [4, 8]


def test_a_gguf_checkpoint_is_unavailable_at_stage_0_and_drops_what_needs_safetensors(tmp_path: Path) -> None:
    """llama.cpp's checkpoint is one GGUF file: no audit or memory plan reads it, said; a candidate that asks for a
    plan is dropped before any start, the others go on."""
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    path = write_plan(tmp_path / "p.yaml", synthetic_plan(gguf))
    got = invoke(["trial", str(path), "--out", str(tmp_path / "out"), "--only", "checkpoint", "--json", str(tmp_path / "s.json")])
    summary = yaml.safe_load((tmp_path / "s.json").read_text())
    stage = summary["stages"][0]
    assert got.code == 8 and stage["verdict"] == "UNAVAILABLE" and "is a GGUF file" in stage["reason"], got.output
    dropped = {c["name"]: c["reason"] for c in summary["candidates"] if c["dropped"]}
    assert dropped == {n: "plan: reads a safetensors checkpoint, not model.gguf" for n in ("eight", "misfit")}
    assert [s["reason"] for s in summary["stages"][1:]] == ["not run: not chosen (--only / --until)"] * 6
