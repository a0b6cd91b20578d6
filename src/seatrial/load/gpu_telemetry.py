"""GPU telemetry during load: every measured level samples each GPU in view at 10 Hz with
:class:`seatrial.hw.telemetry.TelemetrySampler` (power, the energy counter, clocks, utilisation, memory
used, temperature, clock-event reasons) and is summarized by :func:`seatrial.hw.energy.summarize`.

In view: this host's GPUs through NVML, or, with ``--ray``, the GPUs of every alive Ray node that offers the
``seatrial_gpu`` resource, through one actor on each (pinned to its node). Where none can be read, the
level's ``gpu_telemetry`` is UNAVAILABLE with the reason.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from seatrial.hw.energy import summarize, unavailable
from seatrial.hw.nvml import Nvml, Unavailable, load_nvml, read
from seatrial.hw.telemetry import TelemetrySampler
from seatrial.runs.summaries.bench import GpuTelemetry

HZ = 10.0
RAY_GPU_RESOURCE = "seatrial_gpu"
RAY_TIMEOUT_S = 60.0


class NodeGpus:
    """The GPUs NVML sees on one host: a level's sampling, started and stopped (here, or in a Ray actor)."""

    def __init__(self, hz: float = HZ, loaded: tuple[Nvml | None, str | None] | None = None) -> None:
        self.hz, self.host = hz, socket.gethostname()
        self.nvml, self.reason = loaded or load_nvml()
        self.names: dict[int, str | None] = {}
        if self.nvml is not None:
            if self.nvml.device_count == 0:
                self.reason = "NVML sees no GPU on this host"
            for i in range(self.nvml.device_count):
                name = read(self.nvml.lib.nvmlDeviceGetName, self.nvml.handle(i))
                self.names[i] = None if isinstance(name, Unavailable) else str(name)
        self._sampler: TelemetrySampler | None = None

    def why_not(self) -> str | None:
        """Why this host's GPUs cannot be read (None: they can)."""
        return None if self.reason is None else f"{self.host}: {self.reason}"

    def start(self) -> None:
        if self.nvml is not None and self.reason is None:
            self._sampler = TelemetrySampler(self.nvml, sorted(self.names), 1.0 / self.hz).__enter__()

    def stop(self) -> list[dict[str, Any]]:
        """Each GPU's samples since :meth:`start` (``t_s`` from the start), and the fields NVML would not give."""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return []
        sampler.__exit__()
        return [{"node": self.host, "index": i, "name": self.names.get(i), "samples": sampler.samples[i],
                 "unavailable": sampler.unavailable[i]} for i in sorted(sampler.samples)]  # fmt: skip


class LevelWatch:
    """The run's GPU telemetry: :meth:`start` as a level's measured requests begin, :meth:`stop` when they
    end (``t0_ns``: the run's start, ``perf_counter_ns``, so that levels line up on one time axis)."""

    def __init__(self, ray_address: str | None = None, hz: float = HZ, local: NodeGpus | None = None) -> None:
        self.hz, self.t0_ns = hz, time.perf_counter_ns()
        self.source = "ray" if ray_address else "nvml"
        self._started_s = self._window_s = 0.0
        self._series: list[dict[str, Any]] = []
        self._actors: list[Any] = []
        self._local: NodeGpus | None = None
        self.reason: str | None = None  # no GPU can be read
        self.missing: list[str] = []  # Ray nodes whose GPUs cannot be read, beside others that can
        if ray_address:
            self._ray_actors(ray_address)
        else:
            self._local = local or NodeGpus(hz)
            self.reason = self._local.why_not()

    def _ray_actors(self, address: str) -> None:
        from seatrial.raycluster import alive_nodes, connect_ray

        ray = connect_ray(address)
        nodes = [n for n in alive_nodes(address) if n["Resources"].get(RAY_GPU_RESOURCE, 0) > 0]
        if not nodes:
            self.reason = f"no alive node of the Ray cluster at {address} offers {RAY_GPU_RESOURCE!r}"
            return
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        cls = ray.remote(NodeGpus)
        self._ray = ray
        self._actors = [cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
                                    num_cpus=0, resources={RAY_GPU_RESOURCE: 0.001}).remote(self.hz)
                        for n in nodes]  # fmt: skip
        reasons = ray.get([a.why_not.remote() for a in self._actors], timeout=RAY_TIMEOUT_S)
        if all(reasons):
            self.reason = "; ".join(reasons)
        else:
            self.missing = [r for r in reasons if r]

    def start(self) -> None:
        self._started_s = (time.perf_counter_ns() - self.t0_ns) / 1e9
        if self._local is not None:
            self._local.start()
        elif self._actors:
            self._ray.get([a.start.remote() for a in self._actors], timeout=RAY_TIMEOUT_S)

    def stop(self) -> None:
        """End the level's sampling (its samples are kept until :meth:`summary`)."""
        self._window_s = (time.perf_counter_ns() - self.t0_ns) / 1e9 - self._started_s
        if self._local is not None:
            self._series = self._local.stop()
        elif self._actors:
            self._series = [s for part in self._ray.get([a.stop.remote() for a in self._actors],
                                                        timeout=RAY_TIMEOUT_S) for s in part]  # fmt: skip

    def summary(self, output_tokens: int) -> GpuTelemetry:
        """The level just stopped, its energy per output token from ``output_tokens``."""
        series, self._series = self._series, []
        if self.reason is not None or not series:
            return unavailable(self.reason or "no GPU was sampled", self.source, self.hz)
        out = summarize(series, output_tokens, self.hz, self.source, self._started_s, self._window_s)
        out.notes += [f"not sampled: {why}" for why in self.missing]
        return out

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
