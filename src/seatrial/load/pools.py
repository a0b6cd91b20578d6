"""Pools of client workers for ``--workers N`` (processes on this host, spawned) and ``--ray ADDRESS
--clients N`` (Ray actors, spread over the nodes that offer the ``seatrial_client`` resource). Both run
:func:`seatrial.load.worker.run_share` and hand back each record as it completes."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from seatrial.errors import ConfigError
from seatrial.load.distributed import READY_TIMEOUT_S, Clock, best_offset
from seatrial.load.records import RequestRecord
from seatrial.load.share import WorkerClock, WorkerShare, WorkerStats, pack, unpack
from seatrial.raycluster import connect_ray

#: one finished record of a worker, with where that worker's clock stood
OnRecord = Callable[[int, RequestRecord, WorkerClock], None]
#: what a worker hands back: its finished records, each with its clock
Returned = list[tuple[RequestRecord, WorkerClock]]
#: called once every worker of the level is ready (or gone): sets the common start, returns it (wall ns)
OnStart = Callable[[], int]
PINGS = 7
RAY_RESOURCE = "seatrial_client"


class Pool(Protocol):
    size: int
    clocks: dict[int, Clock]

    async def run(
        self, shares: list[WorkerShare], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, WorkerStats | str]:
        """Each share on its worker (every share pickled first, :func:`~seatrial.load.share.pack`), started
        together once all are ready; per worker its stats, or why it died."""

    def kill(self, worker: int) -> None:
        """Kill one worker (tests: a client that dies mid-level)."""

    def close(self) -> None: ...


#: a worker sends its finished records in batches: at most this many, or this old (seconds)
BATCH_ROWS, BATCH_S = 64, 0.05


class _Batcher:
    """Finished records, sent to the driver in batches (one pickle and one pipe write per batch)."""

    def __init__(self, worker: int, results: Connection) -> None:
        self.worker, self.results = worker, results
        self.rows: Returned = []
        self.since = time.monotonic()

    def add(self, rec: RequestRecord, clock: WorkerClock) -> None:
        if not self.rows:
            self.since = time.monotonic()
        self.rows.append((rec, clock))
        if len(self.rows) >= BATCH_ROWS or time.monotonic() - self.since >= BATCH_S:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.results.send(("records", self.worker, self.rows))
            self.rows = []


def _worker_main(worker: int, tasks: Connection, results: Connection) -> None:
    """A pool process: answers pings, runs level shares, streams their records, each on its own pipe
    (nothing shared with another worker: a worker killed mid-write tears only its own pipe)."""
    from seatrial.load.worker import run_share

    async def ready() -> int:
        results.send(("ready", worker, None))
        go = await asyncio.to_thread(_recv, tasks)
        if go is None:  # the driver closed the pool before the start
            raise RuntimeError("the pool closed before the level started")
        return int(go[1])

    while (msg := _recv(tasks)) is not None:
        if msg[0] == "ping":
            results.send(("pong", worker, time.time_ns()))
            continue
        batch = _Batcher(worker, results)
        try:
            stats = asyncio.run(run_share(unpack(msg[1]), batch.add, ready))
            batch.flush()
            results.send(("done", worker, stats))
        except Exception as exc:  # the driver turns the share's missing records into failures
            batch.flush()
            results.send(("error", worker, f"{type(exc).__name__}: {exc}"))


def _recv(conn: Connection) -> Any:
    """The next message, or None once the other end is gone."""
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


class ProcessPool:
    """``size`` spawned processes (a fresh interpreter each: no state inherited from the driver's loop),
    each with a pipe of its own for tasks and one for results. The driver waits on every result pipe
    and every process's sentinel at once (``multiprocessing.connection.wait``): a worker that dies, even
    halfway through writing a batch, is seen as gone, and the others' records keep flowing."""

    def __init__(self, size: int) -> None:
        ctx = mp.get_context("spawn")
        self.size = size
        self.tasks: list[Connection] = []
        self.results: list[Connection] = []
        self.procs = []
        for w in range(size):
            task_in, task_out = ctx.Pipe(duplex=False)
            result_in, result_out = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker_main, args=(w, task_in, result_out), daemon=True)
            proc.start()
            task_in.close()  # the worker holds these ends alone: its death closes them
            result_out.close()
            self.tasks.append(task_out)
            self.results.append(result_in)
            self.procs.append(proc)
        self.clocks = {w: self._clock(w) for w in range(size)}

    def _clock(self, worker: int) -> Clock:
        samples = []
        for _ in range(PINGS):
            t0 = time.time_ns()
            self._send(worker, ("ping",))
            if not self.results[worker].poll(120) or (msg := _recv(self.results[worker])) is None:
                raise ConfigError(
                    f"client worker {worker} did not start (exit {self.procs[worker].exitcode})"
                )
            samples.append((t0, msg[2], time.time_ns()))
        offset, rtt = best_offset(samples)
        return Clock(worker, offset, rtt, f"{socket.gethostname()} pid {self.procs[worker].pid}")

    def _send(self, worker: int, msg: Any) -> bool:
        """Send ``msg`` to ``worker``; False when it is gone."""
        try:
            self.tasks[worker].send(msg)
            return True
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
            return False

    async def run(
        self, shares: list[WorkerShare], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, WorkerStats | str]:
        """The shares on their processes; a reader thread waits on the result pipes and sentinels (no
        thread hop per message on the event loop) and hands each message to the loop. The go goes to every
        ready worker once no running worker is still getting ready (or at ``READY_TIMEOUT_S``)."""
        packed = pack(shares)
        out: dict[int, WorkerStats | str] = {}
        pending: set[int] = set()
        for w, data in packed.items():
            if self.procs[w].is_alive() and self._send(w, ("level", data)):
                pending.add(w)
            else:
                out[w] = f"process exited with {self.procs[w].exitcode}"
        if not pending:
            return out
        ready: set[int] = set()
        started: list[bool] = []
        loop = asyncio.get_running_loop()
        finished = loop.create_future()

        def go(force: bool = False) -> None:
            if started or not (force or pending <= ready):
                return
            started.append(True)
            start = on_start()
            for w in pending:
                self._send(w, ("go", start))

        timer = loop.call_later(READY_TIMEOUT_S, go, True)

        def deliver(kind: str, worker: int, body: Any) -> None:
            if kind == "ready":
                ready.add(worker)
            elif kind == "records":
                for rec, clock in body:
                    on_record(worker, rec, clock)
            elif kind in ("done", "error", "died") and worker in pending:
                out[worker] = body
                pending.discard(worker)
            go()
            if not pending and not finished.done():
                finished.set_result(None)

        reader = threading.Thread(
            target=self._read, args=(set(pending), loop, deliver), name="seatrial-pool-reader", daemon=True
        )
        reader.start()
        try:
            await finished
        finally:
            timer.cancel()
        await asyncio.to_thread(reader.join)
        return out

    def _read(self, waiting: set[int], loop: asyncio.AbstractEventLoop, deliver: Callable[..., None]) -> None:
        """Until every worker in ``waiting`` is done, failed or gone: each message as it comes, from
        whichever pipe has one; a worker whose pipe ends or whose process exits is gone (what it wrote
        before is read first; a message torn by its death ends its pipe, no other)."""
        pipes = {self.results[w]: w for w in waiting}
        sentinels = {self.procs[w].sentinel: w for w in waiting}

        def take(w: int, msg: Any) -> None:
            if msg[0] in ("done", "error"):
                waiting.discard(w)
            loop.call_soon_threadsafe(deliver, *msg)

        while waiting:
            live = [c for c, w in pipes.items() if w in waiting] + [
                s for s, w in sentinels.items() if w in waiting
            ]
            for obj in wait(live, timeout=1.0):
                w = pipes[obj] if isinstance(obj, Connection) else sentinels[obj]  # type: ignore[index]
                if w not in waiting:
                    continue
                if isinstance(obj, Connection) and (msg := _recv(obj)) is not None:
                    take(w, msg)
                    continue
                conn = self.results[w]
                while w in waiting and conn.poll(0) and (msg := _recv(conn)) is not None:
                    take(w, msg)
                if w in waiting:
                    self.procs[w].join(5)
                    waiting.discard(w)
                    loop.call_soon_threadsafe(
                        deliver, "died", w, f"process exited with {self.procs[w].exitcode}"
                    )

    def kill(self, worker: int) -> None:
        """Kill one worker process (tests: a client that dies mid-level)."""
        self.procs[worker].kill()

    def close(self) -> None:
        for w, p in enumerate(self.procs):
            if p.is_alive():
                self._send(w, None)
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
        for conn in (*self.tasks, *self.results):
            conn.close()


def _actor_class(ray: Any) -> Any:
    @ray.remote
    class ClientActor:
        """One client worker. A level: ``run`` gets ready and waits; ``wait_ready`` answers once it is
        (or once ``run`` ended); ``go`` hands it the common start."""

        def __init__(self, worker: int) -> None:
            import seatrial.load.worker  # noqa: F401  (imported now, not inside a level's start margin)

            self.worker = worker
            self.buffer: Returned = []
            self.levels: dict[str, tuple[asyncio.Event, asyncio.Future[int]]] = {}

        def _level(self, key: str) -> tuple[asyncio.Event, asyncio.Future[int]]:
            if key not in self.levels:
                self.levels[key] = (asyncio.Event(), asyncio.get_running_loop().create_future())
            return self.levels[key]

        def now(self) -> int:
            return time.time_ns()

        def where(self) -> str:
            return f"{socket.gethostname()} node {ray.get_runtime_context().get_node_id()[:12]} pid {os.getpid()}"

        async def run(self, data: bytes) -> WorkerStats:
            from seatrial.load.worker import run_share

            share = unpack(data)
            is_ready, start = self._level(share.sending.id_prefix)

            async def ready() -> int:
                is_ready.set()
                return await start

            try:  # the buffer of now, not of then (drain replaces it)
                return await run_share(share, lambda rec, clock: self.buffer.append((rec, clock)), ready)
            finally:
                is_ready.set()

        async def wait_ready(self, key: str) -> None:
            await self._level(key)[0].wait()

        async def go(self, key: str, start_wall_ns: int) -> None:
            start = self._level(key)[1]
            if not start.done():
                start.set_result(start_wall_ns)
            self.levels.pop(key, None)

        def drain(self) -> Returned:
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
        self, shares: list[WorkerShare], on_record: OnRecord, on_start: OnStart
    ) -> dict[int, WorkerStats | str]:
        """The shares on their actors; every actor's buffer is drained as it goes and once more when its
        run ends, however it ends (a run that raised leaves no row behind for the next level)."""
        if not shares:
            return {}
        ray, packed = self.ray, pack(shares)
        refs = {w: self.actors[w].run.remote(data) for w, data in packed.items()}
        await self._start_together(shares, on_start)
        out: dict[int, WorkerStats | str] = {}

        async def drain(w: int) -> None:
            for rec, clock in await self.actors[w].drain.remote():
                on_record(w, rec, clock)

        while len(out) < len(refs):
            await asyncio.sleep(0.2)
            for w, ref in refs.items():
                if w in out:
                    continue
                try:
                    await drain(w)
                    ready, _ = ray.wait([ref], timeout=0)
                    if not ready:
                        continue
                    try:
                        out[w] = await ref
                    except ray.exceptions.RayTaskError as exc:
                        out[w] = f"error: {str(exc).splitlines()[-1]}"
                    await drain(w)  # what it sent after the last drain, before it ended
                except ray.exceptions.RayActorError as exc:
                    out[w] = f"Ray actor died: {str(exc).splitlines()[0]}"
        return out

    async def _start_together(self, shares: list[WorkerShare], on_start: OnStart) -> None:
        """Wait until every actor is ready (or gone, or ``READY_TIMEOUT_S`` passed), then send the start."""

        async def settled(ref: Any) -> None:
            with contextlib.suppress(Exception):  # a dead actor is ready as it will ever be
                await ref

        key = shares[0].sending.id_prefix if shares else ""
        waits = [settled(self.actors[s.worker].wait_ready.remote(key)) for s in shares]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), READY_TIMEOUT_S)
        start = on_start()
        for s in shares:
            self.actors[s.worker].go.remote(key, start)

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
