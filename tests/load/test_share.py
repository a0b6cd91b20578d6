"""A worker's share is one typed model, pickled for every worker before any is sent one (issue 26 item 3):
a share that cannot go is a clear error naming the worker and the field, and no worker has begun."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from tests.pooled import sending

from seatrial.errors import ConfigError
from seatrial.load.distributed import split
from seatrial.load.pools import ProcessPool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelLoad
from seatrial.load.share import WorkerClock, WorkerShare, WorkerStats, pack, unpack
from seatrial.load.workloads import RequestSpec
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def _specs(n: int) -> list[RequestSpec]:
    return [RequestSpec(prompt=[{"role": "user", "content": f"w{i} w{i}"}], output_len=4) for i in range(n)]


def test_every_share_comes_back_from_pickle_as_it_went() -> None:
    shares = split(_specs(10), LevelLoad(4, rate=20.0), 2, sending())
    packed = pack(shares)
    assert sorted(packed) == [0, 1]
    for share in shares:
        back = unpack(packed[share.worker])
        assert isinstance(back, WorkerShare) and back == share and back.specs[0] == share.specs[0]


def _unpicklable(url: str = "http://127.0.0.1:9") -> list[WorkerShare]:
    specs = _specs(6)
    specs[3].prompt = [{"role": "user", "content": threading.Lock()}]  # type: ignore[dict-item]
    return split(specs, LevelLoad(2), 2, sending(url))  # indices 0-2 on worker 0, 3-5 on worker 1


def test_a_share_that_does_not_pickle_is_refused_naming_the_worker_and_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        pack(_unpicklable())
    message = str(err.value)
    assert message.startswith("the share of client worker 1 cannot be sent to it: specs[0].prompt[0]['content'] "
                              "(request L0-00003) does not pickle")  # fmt: skip
    assert "does not pickle (TypeError: cannot pickle '_thread.lock' object)" in message
    assert message.endswith("no worker was sent its share")


def test_a_pool_refuses_such_a_share_before_any_worker_begins() -> None:
    """Worker 0's share pickles, worker 1's does not: the pool sends neither, and its workers run the next
    level as if nothing had happened (a worker sent its share would be waiting for a go)."""
    got: list[tuple[int, RequestRecord, WorkerClock]] = []
    with ThreadedServer(SyntheticConfig(itl_s=0.001, ttft_s=0.001)) as server:
        pool = ProcessPool(2)
        try:
            with pytest.raises(ConfigError, match="client worker 1 cannot be sent"):
                asyncio.run(pool.run(_unpicklable(server.url), lambda w, r, c: got.append((w, r, c)), time.time_ns))
            assert got == []
            good = split(_specs(6), LevelLoad(2), 2, sending(server.url))
            out = asyncio.run(pool.run(good, lambda w, r, c: got.append((w, r, c)), time.time_ns))
        finally:
            pool.close()
    assert sorted(out) == [0, 1] and all(isinstance(s, WorkerStats) and s.requests == 3 for s in out.values())
    assert sorted(r.request_id for _, r, _ in got) == [f"L0-{i:05d}" for i in range(6)]
    assert all(r.ok and r.level == 0 and isinstance(c, WorkerClock) for _, r, c in got)
