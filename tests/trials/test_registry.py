"""The accept trial registry (seatrial.trials.registry) is the one place a trial is added: the profile's
``trials:`` tree, the trial names and the run order derive from it, and a new entry runs end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import Field

from seatrial.errors import ConfigError
from seatrial.report.sections.trials import PLOTS
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.testing.server import SyntheticConfig, ThreadedServer
from seatrial.trials import TRIAL_NAMES, run_accept
from seatrial.trials.configs import TrialConfig
from seatrial.trials.env import TrialEnv
from seatrial.trials.profile import default_profile_text, load_profile, trials_model
from seatrial.trials.registry import TRIALS, AcceptTrial


def test_names_profile_and_plots_derive_from_the_registry() -> None:
    assert TRIAL_NAMES == tuple(TRIALS) == ("basic", "context", "mixed", "saturation", "prefix-cache", "kv-tier")
    profile = load_profile(None, "full")
    dumped = profile.model_dump(mode="json", by_alias=True)["trials"]
    assert list(dumped) == list(TRIALS)  # run.json's profile: every trial under its own name
    for name, trial in TRIALS.items():
        assert dumped[name] == profile.config(trial.config).model_dump(mode="json")
    shipped = yaml.safe_load(default_profile_text())
    assert list(shipped["trials"]) == list(TRIALS) and list(shipped["small"]["trials"]) == list(TRIALS)
    assert set(PLOTS) <= set(TRIALS)  # the report draws plots only for trials that exist


def test_the_code_defaults_are_the_shipped_full_profile() -> None:
    """A profile that leaves a key out gets the code's default: it must be the shipped full-scale value, and the
    shipped profile states every key (issue 44 item 1)."""
    shipped = yaml.safe_load(default_profile_text())["trials"]
    for name, trial in TRIALS.items():
        code = trial.config().model_dump(mode="json")
        assert shipped[name] == code, (name, {k: (code.get(k), v) for k, v in shipped[name].items() if code.get(k) != v})


class EchoConfig(TrialConfig):
    requests: int = Field(3, ge=1)
    output_len: int = Field(4, ge=2)


async def echo(env: TrialEnv) -> TrialResult:
    """A trial that is only a registry entry: its requests, and PASS when every one came back."""
    cfg = env.profile.config(EchoConfig)
    specs = await env.specs(cfg.requests, 8, cfg.output_len, "echo")
    records, _ = await env.send_all(specs, 1, "echo")
    ok = sum(r.ok and r.output_tokens == cfg.output_len for r in records)
    verdict = Verdict.PASS if ok == cfg.requests else Verdict.FAIL
    return TrialResult(name="echo", verdict=verdict, samples={"requests": len(records)}, evidence={"ok": ok})


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(TRIALS, "echo", AcceptTrial(EchoConfig, echo))
    trials_model.cache_clear()
    yield
    monkeypatch.undo()
    trials_model.cache_clear()


def test_a_new_trial_is_one_registry_entry(with_echo: None, tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("trials:\n  echo: {requests: 5}\n")
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.002)) as srv:
        summary = run_accept(srv.url, profile=tmp_path / "p.yaml", trials=["echo"], out_dir=tmp_path / "run")
    (row,) = summary["trials"]
    assert (row["name"], row["verdict"], row["samples"], row["evidence"]) == ("echo", "PASS", {"requests": 5}, {"ok": 5})
    config = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert config["profile"]["trials"]["echo"] == {"requests": 5, "output_len": 4}
    assert config["profile"]["run"] == [*TRIAL_NAMES, "echo"]
    (tmp_path / "bad.yaml").write_text("trials:\n  echo: {requests: 0}\n")
    with pytest.raises(ConfigError, match=r"trials\.echo\.requests"):
        load_profile(tmp_path / "bad.yaml", "full")
