"""The acceptance trials: one entry per trial, in the order a profile runs them by default. A new trial is a
module with its config model (seatrial.trials.configs.TrialConfig) and ``async def run(env) -> TrialResult``,
one entry here, and its sizes in default_profile.yaml. The profile's ``trials:`` tree and ``TRIAL_NAMES``
derive from it; the report draws a trial's plots where seatrial.report.sections.trials.PLOTS names it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from seatrial.runs.result import TrialResult
from seatrial.trials import basic, context, kv_tier, mixed, prefix_cache, saturation
from seatrial.trials.configs import TrialConfig
from seatrial.trials.env import TrialEnv
from seatrial.trials.mixed_rules import MixedConfig
from seatrial.trials.saturation_rules import SaturationConfig

TrialFn = Callable[[TrialEnv], Awaitable[TrialResult]]


@dataclass(frozen=True)
class AcceptTrial:
    """``config``: the model of its ``trials:`` entry in a profile (its defaults are the full-scale sizes);
    ``run``: measures and judges it (reads its config with ``env.profile.config(config)``)."""

    config: type[TrialConfig]
    run: TrialFn


TRIALS: dict[str, AcceptTrial] = {
    "basic": AcceptTrial(basic.BasicConfig, basic.run),
    "context": AcceptTrial(context.ContextConfig, context.run),
    "mixed": AcceptTrial(MixedConfig, mixed.run),
    "saturation": AcceptTrial(SaturationConfig, saturation.run),
    "prefix-cache": AcceptTrial(prefix_cache.PrefixCacheConfig, prefix_cache.run),
    "kv-tier": AcceptTrial(kv_tier.KvTierConfig, kv_tier.run),
}
TRIAL_NAMES: tuple[str, ...] = tuple(TRIALS)
