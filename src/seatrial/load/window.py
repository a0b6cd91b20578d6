"""A level's steady state, where its own data says it began (issue 38 item 2).

The level sends its warm-up first (a count: bench's ``--warmup``, a quarter of a capacity probe), never
measured. Then MSER-5 (:mod:`seatrial.stats.steady`) reads the measured requests' TTFTs in send order and
says how many of the first of them were still the warm-up's transient (a queue still filling), whether
the rest is stationary, and, of an open loop whose TTFTs never settled and kept rising, that it is
overloaded (its queue kept growing). Every steady level records that (``window``). A capacity probe also
cuts the transient from its figures (its looks size the next run by what is left); its successful
requests sent before ``window.start_ms`` are left out, every failure is kept (a failure counts against
the level wherever it was sent). Other levels keep their figures over all their measured requests: a
level's size is its user's (accept's steps need theirs for a p90), and MSER-5's minimum on a steady
series can fall anywhere in its first half. requests.jsonl keeps every record as flushed (phase
``measure``); experiment reads a level's rows from its ``window.start_ms`` on. Nothing is found in a
level of fewer than 100 measured requests with a TTFT: MSER-5 cannot place a warm-up in so few.

A steady level's window is also judged by its length (issue 38 item 3): fewer measured requests than
``STEADY_MULTIPLE`` x the requests it held in flight (the client's mean, or the server's mean running +
waiting where it exports them) is mostly the queue filling and draining, not the load's steady state;
the level says so (``window.short`` and a note), and a capacity probe neither MEETS on such a run nor stops
short of that length (capacity.looks).
"""

from __future__ import annotations

import numpy as np

from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.bench import LevelWindow, ServerView
from seatrial.stats.steady import MIN_BATCHES, MSER_BATCH, mser5

STEADY_MULTIPLE = 10  # a steady level's measured requests, at least, per request it held in flight


def steady_window(
    records: list[RequestRecord], open_loop: bool, cut: bool
) -> tuple[list[RequestRecord], list[RequestRecord], LevelWindow]:
    """The level's figures' requests (send order: with ``cut``, every failure and the rest sent from the
    window's start on; else all), the successful ones it left to the warm-up, and the window."""
    ordered = sorted(records, key=lambda r: r.sent_ms)
    timed = [i for i, r in enumerate(ordered) if r.ttft_ms is not None]
    t = mser5(np.array([ordered[i].ttft_ms for i in timed], dtype=float))
    front = timed[t.cut] if t.cut else 0  # every request sent before the first steady TTFT
    transient = sum(r.error is None for r in ordered[:front])
    at = front if cut else 0
    left = [r for r in ordered[:at] if r.error is None]  # a failure always counts against the level
    kept = [r for r in ordered[:at] if r.error is not None] + ordered[at:]
    window = LevelWindow(
        transient=transient,
        excluded=len(left),
        start_ms=ordered[at].sent_ms if left and at < len(ordered) else None,
        stationary=t.stationary,
        overloaded=open_loop and t.rising,
        reason=_reason(len(timed), transient, cut, t.stationary, open_loop and t.rising),
    )
    return kept, left, window


def _reason(timed: int, transient: int, cut: bool, stationary: bool | None, overloaded: bool) -> str:
    if stationary is None:
        return (
            f"{timed} measured requests with a TTFT: too few for MSER-5 to place a warm-up (at least "
            f"{MIN_BATCHES * MSER_BATCH}); the window starts after the warm-up sent"
        )
    if not transient:
        head = "the TTFTs were stationary from the first measured request" if stationary else "MSER-5 on TTFT: no warm-up to cut"
    elif cut:
        head = f"MSER-5 on TTFT left the first {transient} measured requests to the warm-up (a transient)"
    else:
        head = (
            f"MSER-5 on TTFT calls the first {transient} measured requests a transient; the level's figures "
            "still hold them (only a capacity probe cuts them)"
        )
    if overloaded:
        return f"{head}; the TTFTs never settled and kept rising: the queue kept growing (overloaded)"
    if not stationary:
        return f"{head}; the TTFTs did not settle within the level (not stationary)"
    return head


def held_in_flight(client_mean: float, server: ServerView) -> float:
    """The requests a level held in flight: the client's mean, or the server's mean running + waiting
    over its scrapes where the engine exports them (other clients' requests included), the larger."""
    if server.in_system_mean is None:
        return client_mean
    return max(client_mean, server.in_system_mean)


def too_short(measured: int, held: float) -> bool:
    """Whether ``measured`` requests are fewer than STEADY_MULTIPLE x the ``held`` in flight (the one rule)."""
    return measured < STEADY_MULTIPLE * held


def judge_length(window: LevelWindow, measured: int, held: float) -> str | None:
    """Records on ``window`` what the level held in flight and whether ``measured`` requests were too few
    for it; the note that says so, else None."""
    window.in_flight = round(held, 2)
    window.short = too_short(measured, held)
    if not window.short:
        return None
    return (
        f"window: {measured} measured requests, under {STEADY_MULTIPLE}x the {held:.0f} it held in flight: "
        "mostly the queue filling and draining, not the load's steady state (measure more requests)"
    )
