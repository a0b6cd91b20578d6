"""``seatrial accept``: run a profile's trials against one server and write the verdicts.

``run_accept`` is the library entry (``seatrial demo`` calls it with the small profile). The
summary is ``{"trials": [{"name", "verdict", ...,"evidence"}], "passed", "not_measured", "counts", ...}``
(:func:`seatrial.runs.judge_run`: ``passed`` only when a trial PASSed and none failed; UNAVAILABLE and
UNSUPPORTED trials are ``not_measured``, with their reasons).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seatrial.errors import ConfigError, ServerError
from seatrial.load.bench import NoProgress, Progress, new_http, open_session
from seatrial.load.config import BenchConfig, ServerTarget
from seatrial.load.pools import make_pool
from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import judge_run
from seatrial.trials import basic, context, kv_tier, mixed, prefix_cache, saturation
from seatrial.trials.env import TrialEnv
from seatrial.trials.profile import Profile, Scale, check_names, load_profile
from seatrial.trials.serverinfo import server_info
from seatrial.verdict import Verdict

TrialFn = Callable[[TrialEnv], Awaitable[TrialResult]]
TRIALS: dict[str, TrialFn] = {
    "basic": basic.run,
    "context": context.run,
    "mixed": mixed.run,
    "saturation": saturation.run,
    "prefix-cache": prefix_cache.run,
    "kv-tier": kv_tier.run,
}


def make_target(url: str, model: str | None, tokenizer: Path | None) -> ServerTarget:
    try:
        return ServerTarget(url=url, model=model, tokenizer=tokenizer)
    except ValidationError as exc:
        raise ConfigError("; ".join(str(e["msg"]) for e in exc.errors())) from None


async def run_trials(
    target: ServerTarget,
    profile: Profile,
    names: list[str],
    folder: RunFolder | None,
    progress: Progress,
    require: list[str],
    seed: int,
    clients: dict[str, Any],
) -> dict[str, Any]:
    """The trials in order on one HTTP session; the summary so far is rewritten after each trial."""
    results: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"url": target.url, "scale": profile.scale, "trials": results}
    async with new_http(profile.timeout_s, profile.stall_timeout_s) as http:
        session = await open_session(BenchConfig(target=target), http)
        info = await server_info(http, target.url, target.resolved_metrics_url, session.endpoint.headers)
        summary |= {"model": session.model, "server": info.to_json()}
        pool = make_pool(clients.get("workers", 1), clients.get("ray"), clients.get("clients", 2))
        env = TrialEnv(session, target, profile, info, folder, progress, seed=seed, pool=pool)
        try:
            await _each(env, names, results, summary, folder)
        finally:
            if pool is not None:
                pool.close()
    summary.update(verdict_fields(results, require))
    return summary


async def _each(
    env: TrialEnv,
    names: list[str],
    results: list[dict[str, Any]],
    summary: dict[str, Any],
    folder: RunFolder | None,
) -> None:
    """Each trial in turn; a server error fails that trial, and the summary so far is rewritten."""
    for name in names:
        try:
            result = await TRIALS[name](env)
        except ServerError as exc:
            result = TrialResult(name=name, verdict=Verdict.FAIL, reasons=[f"server error: {exc}"])
        results.append(result.to_json())
        if folder:
            folder.write_summary(summary)


def verdict_fields(results: list[dict[str, Any]], require: list[str]) -> dict[str, Any]:
    judged = judge_run(results, require)
    return {k: judged[k] for k in ("passed", "not_measured", "counts", "missing_required")}


def run_accept(
    url: str,
    *,
    model: str | None = None,
    tokenizer: Path | None = None,
    profile: Path | None = None,
    trials: list[str] | None = None,
    scale: Scale = "full",
    out_dir: Path | None = None,
    progress: Progress | None = None,
    require: list[str] | None = None,
    seed: int | None = None,
    clients: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the trials (``trials`` or the profile's ``run`` list) and return the summary; with
    ``out_dir``, write the run folder (run.json, requests.jsonl, server_metrics.jsonl, summary.json,
    report.html)."""
    target = make_target(url, model, tokenizer)
    prof = load_profile(profile, scale)
    try:
        names = check_names(trials or prof.run, "--trials")
        check_names(require or [], "--require")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    seed = secrets.randbelow(1 << 31) if seed is None else seed
    config = {
        "target": target.model_dump(mode="json"),
        "seed": seed,
        "clients": clients or {},
        "scale": scale,
        "trials": names,
        "require": require or [],
        "profile": prof.model_dump(mode="json", by_alias=True),
    }
    folder = RunFolder(out_dir, "accept", config) if out_dir else None
    try:
        summary = asyncio.run(
            run_trials(
                target, prof, names, folder, progress or NoProgress(), require or [], seed, clients or {}
            )
        )
        if folder and out_dir:
            folder.write_summary(summary)
            write_report(out_dir)
    finally:
        if folder:
            folder.close()
    return summary
