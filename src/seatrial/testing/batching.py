"""Continuous batching, as the synthetic server serves it: the law of a GPU engine at scale, in real time.

The law (``BatchLaw``): ``slots`` requests run at once, the rest wait first come first served. The engine
works in steps; a step that starts with ``b`` running requests takes ``t(b) = t0 (1 + a (b - 1))`` and
advances every running request by one: a request's first ``prefill_steps`` steps are its prefill, the
last of them emits its first token, and each step after it one more token, so a request of ``n`` output
tokens holds its slot for ``prefill_steps + n - 1`` steps and leaves at the end of the step that emitted
its last token. Waiting requests are admitted into free slots only when a step starts (an arrival
during a step waits for its end); an idle engine starts a step at once when a request arrives. Every
token of a step is emitted at the step's end.

One timer loop serves every request (``BatchEngine``): it sleeps to each step's end, on the law's own
clock (each step's end is the previous end plus ``t(b)``, never the late wake-up plus ``t(b)``: a late
wake-up delays that step's tokens, not the law), and hands each running request its token. Admissions
are on the same clock: each request carries its arrival, an idle engine's step starts at the first
waiting one's arrival, and a step admits only requests that arrived by its start (a late wake-up finds
later ones waiting too; they wait for the next step, as the law says). The exact
event simulation of the same law is ``benchmarks/batching_law.py``, which the tests hold the served
timings to.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BatchLaw:
    slots: int
    t0_s: float  # a step of one request
    a: float = 0.0  # each further request in the batch adds this share of t0
    prefill_steps: int = 1

    def step_s(self, batch: int) -> float:
        return self.t0_s * (1 + self.a * (batch - 1))


@dataclass
class _Running:
    tokens: asyncio.Queue[int]  # each token's emission time (perf_counter_ns); 0 closes the stream
    n: int  # output tokens
    arrived: int  # perf_counter_ns
    steps: int = 0  # steps done


@dataclass
class BatchEngine:
    """The one timer loop of a :class:`BatchLaw`; made on the server's event loop at its first request."""

    law: BatchLaw
    waiting: collections.deque[_Running] = field(default_factory=collections.deque)
    running: list[_Running] = field(default_factory=list)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def submit(self, n: int, arrived: int) -> asyncio.Queue[int]:
        """Queues a request of ``n`` output tokens that arrived at ``arrived`` (``perf_counter_ns``, no
        earlier than any queued one's); its tokens' emission times arrive on the queue, then 0."""
        req = _Running(asyncio.Queue(), max(1, n), arrived)
        self.waiting.append(req)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._wake.set()
        return req.tokens

    async def _loop(self) -> None:
        end = 0
        while True:
            if not self.running:
                if not self.waiting:
                    self._wake.clear()
                    await self._wake.wait()
                end = max(end, self.waiting[0].arrived)  # idle: the next step starts at the arrival
            while self.waiting and len(self.running) < self.law.slots and self.waiting[0].arrived <= end:
                self.running.append(self.waiting.popleft())
            end += int(self.law.step_s(len(self.running)) * 1e9)
            delay = (end - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            self._advance(time.perf_counter_ns())

    def _advance(self, now: int) -> None:
        """The step's end: every running request one step further; tokens out, finished requests leave."""
        still, prefill = [], self.law.prefill_steps
        for req in self.running:
            req.steps += 1
            if req.steps >= prefill:
                req.tokens.put_nowait(now)
            if req.steps - prefill + 1 >= req.n:
                req.tokens.put_nowait(0)
            else:
                still.append(req)
        self.running = still
