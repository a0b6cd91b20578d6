"""Pools of client workers for ``--workers N`` (processes on this host, spawned) and ``--ray ADDRESS
--clients N`` (Ray actors, spread over the nodes that offer the ``seatrial_client`` resource). Both run
:func:`seatrial.load.worker.run_share` and hand back each record as it completes."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from seatrial.errors import ConfigError
from seatrial.load.distributed import READY_TIMEOUT_S, Clock, best_offset
from seatrial.raycluster import connect_ray

OnRecord = Callable[[int, dict[str, Any]], None]
#: called once every worker of the level is ready (or gone): sets the common start, returns it (wall ns)
OnStart = Callable[[], int]
PINGS = 7
RAY_RESOURCE = "seatrial_client"


class Pool(Protocol):
    size: int
    clocks: dict[int, Clock]

    async def run(
        self, shares: list[dict[str, Any]], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, dict[str, Any] | str]:
        """Each share on its worker, started together once all are ready; per worker its stats, or why
        it died."""

    def kill(self, worker: int) -> None:
        """Kill one worker (tests: a client that dies mid-level)."""

    def close(self) -> None: ...


#: a worker sends its finished records in batches: at most this many, or this old (seconds)
BATCH_ROWS, BATCH_S = 64, 0.05


class _Batcher:
    """Finished records, sent to the driver in batches (one pickle and one queue write per batch)."""

    def __init__(self, worker: int, results: Any) -> None:
        self.worker, self.results = worker, results
        self.rows: list[dict[str, Any]] = []
        self.since = time.monotonic()

    def add(self, row: dict[str, Any]) -> None:
        if not self.rows:
            self.since = time.monotonic()
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS or time.monotonic() - self.since >= BATCH_S:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.results.put(("records", self.worker, self.rows))
            self.rows = []


def _worker_main(worker: int, tasks: Any, results: Any) -> None:
    """A pool process: answers pings, runs level shares, streams their records."""
    from seatrial.load.worker import run_share

    async def ready() -> int:
        results.put(("ready", worker, None))
        go = await asyncio.to_thread(tasks.get)
        if go is None:  # the driver closed the pool before the start
            tasks.put(None)
            raise RuntimeError("the pool closed before the level started")
        return int(go[1])

    while (msg := tasks.get()) is not None:
        if msg[0] == "ping":
            results.put(("pong", worker, time.time_ns()))
            continue
        batch = _Batcher(worker, results)
        try:
            stats = asyncio.run(run_share(msg[1], batch.add, ready))
            batch.flush()
            results.put(("done", worker, stats))
        except Exception as exc:  # the driver turns the share's missing records into failures
            batch.flush()
            results.put(("error", worker, f"{type(exc).__name__}: {exc}"))


class ProcessPool:
    """``size`` spawned processes (a fresh interpreter each: no state inherited from the driver's loop)."""

    def __init__(self, size: int) -> None:
        ctx = mp.get_context("spawn")
        self.size = size
        self.results: Any = ctx.Queue()
        self.tasks: list[Any] = [ctx.Queue() for _ in range(size)]
        self.procs = [ctx.Process(target=_worker_main, args=(w, self.tasks[w], self.results), daemon=True)
                      for w in range(size)]  # fmt: skip
        for p in self.procs:
            p.start()
        self.clocks = {w: self._clock(w) for w in range(size)}

    def _clock(self, worker: int) -> Clock:
        samples = []
        for _ in range(PINGS):
            t0 = time.time_ns()
            self.tasks[worker].put(("ping",))
            _, _, now = self.results.get(timeout=120)
            samples.append((t0, now, time.time_ns()))
        offset, rtt = best_offset(samples)
        return Clock(worker, offset, rtt, f"{socket.gethostname()} pid {self.procs[worker].pid}")

    async def run(
        self, shares: list[dict[str, Any]], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, dict[str, Any] | str]:
        """The shares on their processes; a reader thread takes the results off the queue (no thread hop
        per message on the event loop) and hands each batch to the loop. The go goes to every ready
        worker once no running worker is still getting ready (or at ``READY_TIMEOUT_S``)."""
        for share in shares:
            self.tasks[share["worker"]].put(("level", share))
        pending = {s["worker"] for s in shares}
        ready: set[int] = set()
        started: list[bool] = []
        out: dict[int, dict[str, Any] | str] = {}
        loop = asyncio.get_running_loop()
        finished = loop.create_future()

        def go(force: bool = False) -> None:
            if started or not (force or pending <= ready):
                return
            started.append(True)
            start = on_start()
            for w in pending:
                self.tasks[w].put(("go", start))

        timer = loop.call_later(READY_TIMEOUT_S, go, True)

        def deliver(kind: str, worker: int, body: Any) -> None:
            if kind == "ready":
                ready.add(worker)
            elif kind == "records":
                for row in body:
                    on_record(worker, row)
            elif kind in ("done", "error", "died") and worker in pending:
                out[worker] = body
                pending.discard(worker)
            go()
            if not pending and not finished.done():
                finished.set_result(None)

        def read() -> None:
            waiting = set(pending)
            while waiting:
                try:
                    kind, worker, body = self.results.get(True, 0.2)
                except queue.Empty:
                    for w in list(waiting):
                        if not self.procs[w].is_alive():
                            waiting.discard(w)
                            loop.call_soon_threadsafe(
                                deliver, "died", w, f"process exited with {self.procs[w].exitcode}"
                            )
                    continue
                if kind in ("done", "error"):
                    waiting.discard(worker)
                loop.call_soon_threadsafe(deliver, kind, worker, body)

        reader = threading.Thread(target=read, name="seatrial-pool-reader", daemon=True)
        reader.start()
        try:
            await finished
        finally:
            timer.cancel()
        await asyncio.to_thread(reader.join)
        return out

    def kill(self, worker: int) -> None:
        """Kill one worker process (tests: a client that dies mid-level)."""
        self.procs[worker].kill()

    def close(self) -> None:
        for w, p in enumerate(self.procs):
            if p.is_alive():
                self.tasks[w].put(None)
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()


def _actor_class(ray: Any) -> Any:
    @ray.remote
    class ClientActor:
        """One client worker. A level: ``run`` gets ready and waits; ``wait_ready`` answers once it is
        (or once ``run`` ended); ``go`` hands it the common start."""

        def __init__(self, worker: int) -> None:
            import seatrial.load.worker  # noqa: F401  (imported now, not inside a level's start margin)

            self.worker = worker
            self.buffer: list[dict[str, Any]] = []
            self.levels: dict[str, tuple[asyncio.Event, asyncio.Future[int]]] = {}

        def _level(self, key: str) -> tuple[asyncio.Event, asyncio.Future[int]]:
            if key not in self.levels:
                self.levels[key] = (asyncio.Event(), asyncio.get_running_loop().create_future())
            return self.levels[key]

        def now(self) -> int:
            return time.time_ns()

        def where(self) -> str:
            return f"{socket.gethostname()} node {ray.get_runtime_context().get_node_id()[:12]} pid {os.getpid()}"

        async def run(self, share: dict[str, Any]) -> dict[str, Any]:
            from seatrial.load.worker import run_share

            is_ready, start = self._level(share["id_prefix"])

            async def ready() -> int:
                is_ready.set()
                return await start

            try:  # the buffer of now, not of then (drain replaces it)
                return await run_share(share, lambda row: self.buffer.append(row), ready)
            finally:
                is_ready.set()

        async def wait_ready(self, key: str) -> None:
            await self._level(key)[0].wait()

        async def go(self, key: str, start_wall_ns: int) -> None:
            start = self._level(key)[1]
            if not start.done():
                start.set_result(start_wall_ns)
            self.levels.pop(key, None)

        def drain(self) -> list[dict[str, Any]]:
            out, self.buffer = self.buffer, []
            return out

    return ClientActor


class RayPool:
    """``size`` actors, SPREAD over the nodes that offer ``seatrial_client`` (one unit each)."""

    def __init__(self, address: str, size: int) -> None:
        self.ray = ray = connect_ray(address)
        offered = ray.cluster_resources().get(RAY_RESOURCE, 0)
        if offered < size:
            raise ConfigError(
                f"--clients {size}: the Ray cluster at {address} offers {offered:g} {RAY_RESOURCE!r} units; start "
                f"client nodes with --resources '{{\"{RAY_RESOURCE}\": N}}' (clients stay off the GPU nodes)"
            )
        cls = _actor_class(ray)
        self.size = size
        self.actors = [cls.options(scheduling_strategy="SPREAD", resources={RAY_RESOURCE: 1}, num_cpus=0,
                                   max_concurrency=8).remote(w) for w in range(size)]  # fmt: skip
        wheres = ray.get([a.where.remote() for a in self.actors], timeout=300)
        self.clocks = {w: self._clock(w, wheres[w]) for w in range(size)}

    def _clock(self, worker: int, where: str) -> Clock:
        samples = []
        for _ in range(PINGS):
            t0 = time.time_ns()
            now = self.ray.get(self.actors[worker].now.remote(), timeout=60)
            samples.append((t0, now, time.time_ns()))
        offset, rtt = best_offset(samples)
        return Clock(worker, offset, rtt, where)

    async def run(
        self, shares: list[dict[str, Any]], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, dict[str, Any] | str]:
        ray = self.ray
        refs = {s["worker"]: self.actors[s["worker"]].run.remote(s) for s in shares}
        await self._start_together(shares, on_start)
        out: dict[int, dict[str, Any] | str] = {}
        while len(out) < len(refs):
            await asyncio.sleep(0.2)
            for w, ref in refs.items():
                if w in out:
                    continue
                try:
                    for row in await self.actors[w].drain.remote():
                        on_record(w, row)
                except ray.exceptions.RayActorError as exc:
                    out[w] = f"Ray actor died: {str(exc).splitlines()[0]}"
                    continue
                ready, _ = ray.wait([ref], timeout=0)
                if ready:
                    try:
                        stats = await ref
                    except ray.exceptions.RayActorError as exc:
                        out[w] = f"Ray actor died: {str(exc).splitlines()[0]}"
                        continue
                    except ray.exceptions.RayTaskError as exc:
                        out[w] = f"error: {str(exc).splitlines()[-1]}"
                        continue
                    for row in await self.actors[w].drain.remote():
                        on_record(w, row)
                    out[w] = stats
        return out

    async def _start_together(self, shares: list[dict[str, Any]], on_start: OnStart) -> None:
        """Wait until every actor is ready (or gone, or ``READY_TIMEOUT_S`` passed), then send the start."""

        async def settled(ref: Any) -> None:
            with contextlib.suppress(Exception):  # a dead actor is ready as it will ever be
                await ref

        key = shares[0]["id_prefix"] if shares else ""
        waits = [settled(self.actors[s["worker"]].wait_ready.remote(key)) for s in shares]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), READY_TIMEOUT_S)
        start = on_start()
        for s in shares:
            self.actors[s["worker"]].go.remote(key, start)

    def kill(self, worker: int) -> None:
        self.ray.kill(self.actors[worker])

    def close(self) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)


def make_pool(workers: int, ray_address: str | None, clients: int) -> Pool | None:
    """The pool a load config asks for, or None for one client (this process)."""
    if ray_address:
        return RayPool(ray_address, clients)
    if workers > 1:
        return ProcessPool(workers)
    return None
