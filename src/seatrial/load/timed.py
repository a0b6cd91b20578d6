"""What an open-loop level is and reports beyond the closed loop's figures: its load (a rate, a ramp of
rates, or a timed workload's own times), its schedule's shape, a replayed trace's figures (the prefix hits
its shared blocks allow beside the server's), and a conversation level's TTFT per turn."""

from __future__ import annotations

from seatrial.errors import ConfigError
from seatrial.load.client import Endpoint
from seatrial.load.config import LoadConfig, WorkloadConfig
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelLoad, arrival_offsets_s
from seatrial.load.workloads import RequestSpec
from seatrial.load.workloads.replay import prefix_hits_allowed
from seatrial.runs.summaries.base import Distribution
from seatrial.runs.summaries.bench import Schedule, SessionStats, TraceStats, TurnTiming
from seatrial.stats import distribution


def open_load(load: LoadConfig, cap: int, seed: int) -> LevelLoad:
    """The open-loop level of ``load``: arrivals at ``--rate``, or a ramp from R0 to R1 over the level's
    requests (its ``rate`` is then the schedule's mean)."""
    if load.ramp_up is None:
        assert load.rate is not None
        return LevelLoad(cap, load.rate, load.arrival, seed, burstiness=load.burstiness)
    assert load.ramp_up_start is not None and load.ramp_up_end is not None
    ramp = (load.ramp_up, load.ramp_up_start, load.ramp_up_end)
    offsets = arrival_offsets_s(load.requests, load.ramp_up_start, load.arrival, seed, load.burstiness, ramp)
    mean = (len(offsets) - 1) / offsets[-1] if len(offsets) > 1 and offsets[-1] > 0 else load.ramp_up_start
    return LevelLoad(cap, mean, load.arrival, seed, burstiness=load.burstiness, ramp=ramp)


def load_label(level: LevelLoad) -> str:
    if level.timed:
        return level.arrival
    if level.ramp is not None:
        return f"ramp {level.ramp[1]:g}-{level.ramp[2]:g}/s"
    return f"C={level.concurrency}" if level.rate is None else f"rate={level.rate:g}/s"


def schedule(level: LevelLoad) -> Schedule:
    gamma = level.arrival == "gamma"
    ramp = level.ramp or (None, None, None)
    return Schedule(arrival=level.arrival, burstiness=level.burstiness if gamma else None, ramp_up=ramp[0],
                    ramp_up_start=ramp[1], ramp_up_end=ramp[2],
                    think_time_ms=level.think_s * 1000 if level.arrival == "sessions" else None)  # fmt: skip


def check_endpoint(specs: list[RequestSpec], ep: Endpoint) -> None:
    """Token-id prompts (a trace of lengths) go to the completions endpoint only."""
    if ep.kind == "chat" and any(isinstance(s.prompt, list) and s.prompt and isinstance(s.prompt[0], int)
                                 for s in specs):  # fmt: skip
        raise ConfigError(
            "this trace gives lengths, replayed as token-id prompts, which only --endpoint completions takes"
        )


def trace_stats(
    wl: WorkloadConfig, specs: list[RequestSpec], records: list[RequestRecord], block_size: int | None
) -> TraceStats:
    """The replayed trace's figures; ``held_for_answer`` compares each turn's schedule with its trace time."""
    at_ms = {s.trace_line: (s.at_s or 0.0) * 1000 for s in specs}
    held = sum(1 for r in records if r.turn and r.scheduled_ms > at_ms.get(r.trace_line, 0.0) + 0.5)
    span = max((s.at_s or 0.0) for s in specs) if specs else 0.0
    return TraceStats(
        file=str(wl.trace), format=str(wl.trace_format), first_line=wl.trace_start, lines=len(specs),
        speedup=wl.speedup, block_tokens=wl.trace_block_tokens, span_s=span, engine_block_size=block_size,
        prefix_hits_allowed=prefix_hits_allowed(specs, block_size) if block_size else None,
        sessions=len({s.session for s in specs if s.session is not None}), held_for_answer=held,
    )  # fmt: skip


def session_stats(records: list[RequestRecord]) -> SessionStats | None:
    """Per turn: ok requests, TTFT, mean prompt tokens (None for a level without conversations)."""
    talks = [r for r in records if r.session is not None and r.turn is not None]
    if not talks:
        return None
    per_turn = []
    for turn in sorted({r.turn for r in talks if r.turn is not None}):
        ok = [r for r in talks if r.turn == turn and r.ok]
        prompts = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
        per_turn.append(TurnTiming(
            turn=turn, requests_ok=len(ok),
            ttft_ms=Distribution.model_validate(distribution([r.ttft_ms for r in ok if r.ttft_ms is not None])),
            prompt_tokens_mean=sum(prompts) / len(prompts) if prompts else None,
        ))  # fmt: skip
    return SessionStats(
        sessions=len({r.session for r in talks}), turns=len(per_turn), per_turn=per_turn
    )
