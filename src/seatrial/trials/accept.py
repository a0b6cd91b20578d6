"""``seatrial accept``: run a profile's trials against one server and write the verdicts.

``run_accept`` is the library entry (``seatrial demo`` calls it with the small profile). The
summary is :class:`seatrial.runs.summaries.accept.AcceptSummary`: ``{"url", "scale", "trials": [{"name",
"verdict", ..., "evidence"}], "model", "server", "passed", "not_measured", "counts", ...}``
(:func:`seatrial.runs.judge_run`: ``passed`` only when a trial PASSed and none failed; UNAVAILABLE and
UNSUPPORTED trials are ``not_measured``, with their reasons).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, ServerError, ServerRefused, config_errors
from seatrial.load.config import BenchConfig, LoadConfig, ObserveConfig, ServerTarget
from seatrial.load.level import NoProgress, Progress, loaded
from seatrial.load.plancheck import check_plan
from seatrial.load.settings import ClientSettings
from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.runs.summaries.bench import PlanCheck
from seatrial.runs.verdicts import Verdict
from seatrial.trials.env import TrialEnv
from seatrial.trials.profile import Profile, Scale, check_names, load_profile
from seatrial.trials.registry import TRIALS
from seatrial.trials.serverinfo import server_info


def make_target(url: str, model: str | None, tokenizer: Path | None, api_key_env: str | None = None) -> ServerTarget:
    given = {"api_key_env": api_key_env} if api_key_env is not None else {}
    with config_errors():
        return ServerTarget(url=url, model=model, tokenizer=tokenizer, **given)


async def run_trials(
    target: ServerTarget,
    profile: Profile,
    names: list[str],
    folder: RunFolder | None,
    progress: Progress,
    require: list[str],
    seed: int,
    clients: ClientSettings,
    observe: ObserveConfig | None = None,
) -> AcceptSummary:
    """The trials in order on one HTTP session; the summary so far is rewritten after each trial.
    ``observe``: the engine's spans, the GPUs' telemetry and the plan, as bench reads them."""
    observe = observe or ObserveConfig()
    summary = AcceptSummary(url=target.url, scale=profile.scale)
    load = LoadConfig(workers=clients.workers, ray=clients.ray, clients=clients.clients,
                      timeout_s=profile.timeout_s, stall_timeout_s=profile.stall_timeout_s)  # fmt: skip
    async with loaded(BenchConfig(target=target, load=load, observe=observe)) as run:
        session, book = run.session, run.spans
        info = await server_info(run.http, target.url, target.resolved_metrics_url, session.endpoint.headers)
        summary.model, summary.server = session.model, info.facts()
        check = await check_plan(observe.plan, run.http, session.metrics_url) if observe.plan else None
        env = TrialEnv(session, target, profile, info, folder, progress, seed=seed, pool=run.pool)
        await _each(env, names, summary, folder)
    if book is not None:
        summary.spans = book.counts()
    if check is not None:
        summary.plan_check = with_kv_pressure(check, summary)
    return summary.judged(summary.trials, require)


def with_kv_pressure(check: PlanCheck, summary: AcceptSummary) -> PlanCheck:
    """The plan check with where saturation found KV pressure beginning (if it ran and found it)."""
    sat = summary.trial("saturation")
    began = sat.evidence.get("kv_pressure_concurrency") if sat is not None else None
    return check.model_copy(update={"kv_pressure_concurrency": began})


async def _each(env: TrialEnv, names: list[str], summary: AcceptSummary, folder: RunFolder | None) -> None:
    """Each trial in turn; a server error fails that trial, and the summary so far is rewritten."""
    for name in names:
        try:
            result = await TRIALS[name].run(env)
        except ServerRefused:
            raise  # nothing can be measured: not one trial's failure
        except ServerError as exc:
            result = TrialResult(name=name, verdict=Verdict.FAIL, reasons=[f"server error: {exc}"])
        summary.trials.append(result)
        if folder:
            folder.write_summary(summary.to_json())


def run_accept(
    url: str,
    *,
    model: str | None = None,
    tokenizer: Path | None = None,
    api_key_env: str | None = None,
    profile: Path | None = None,
    trials: list[str] | None = None,
    scale: Scale = "full",
    out_dir: Path | None = None,
    progress: Progress | None = None,
    require: list[str] | None = None,
    seed: int | None = None,
    clients: ClientSettings | dict[str, Any] | None = None,
    observe: ObserveConfig | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the trials (``trials`` or the profile's ``run`` list) and return the summary; with
    ``out_dir``, write the run folder (run.json, requests.jsonl, server_metrics.jsonl, summary.json,
    report.html)."""
    target = make_target(url, model, tokenizer, api_key_env)
    prof = load_profile(profile, scale)
    try:
        names = check_names(trials or prof.run, "--trials")
        check_names(require or [], "--require")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    seed = secrets.randbelow(1 << 31) if seed is None else seed
    with config_errors("clients"):
        clients = ClientSettings.model_validate(clients or {})
    with config_errors("observe"):
        observe = ObserveConfig.model_validate(observe or {})
    config = {
        "target": target.model_dump(mode="json"),
        "seed": seed,
        "clients": clients.model_dump(mode="json"),
        "observe": observe.model_dump(mode="json"),
        "scale": scale,
        "trials": names,
        "require": require or [],
        "profile": prof.model_dump(mode="json", by_alias=True),
    }
    folder = RunFolder(out_dir, "accept", config) if out_dir else None
    try:
        summary = asyncio.run(
            run_trials(
                target, prof, names, folder, progress or NoProgress(), require or [], seed, clients, observe
            )
        ).to_json()
        if folder and out_dir:
            folder.write_summary(summary)
            write_report(out_dir)
    finally:
        if folder:
            folder.close()
    return summary
