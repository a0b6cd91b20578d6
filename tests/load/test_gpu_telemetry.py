"""GPU telemetry during load: the level summary's arithmetic on known samples, the sampler through the NVML
layer (fake NVML with the H200's values), and the path every machine without a GPU takes (CI's): bench's
levels say UNAVAILABLE with the reason, here and through a Ray node offering seatrial_gpu."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.hw.fake_nvml import FakeNvmlLib
from tests.ray_cluster import RayCluster

from seatrial.hw.energy import counter_j, integral_j, summarize
from seatrial.hw.nvml import Nvml
from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.load.gpu_telemetry import LevelWatch, NodeGpus
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def samples(n: int, watts: list[float], mask: list[int]) -> list[dict[str, Any]]:
    """Samples every 0.1 s; the energy counter advances by the mean of two neighbouring power readings."""
    out, energy = [], 1_000_000.0
    for k in range(n):
        if k:
            energy += (watts[k] + watts[k - 1]) / 2 * 0.1 * 1000
        out.append({"t_s": k / 10, "power_w": watts[k], "energy_mj": energy, "clock_event_reasons": mask[k],
                    "sm_clock_mhz": 1980, "memory_used_bytes": 3 << 30})  # fmt: skip
    return out


def test_level_energy_from_the_counter_beside_the_power_integral() -> None:
    watts = [100.0] * 5 + [600.0] * 6  # a step: 11 samples over 1.0 s
    masks = [0x4] * 8 + [0x8] * 3  # sw_power_cap is normal; hw_slowdown is not
    s = samples(11, watts, masks)
    assert integral_j(s, "power_w") == pytest.approx(0.4 * 100 + 0.05 * 700 + 0.5 * 600)
    assert counter_j(s) == pytest.approx(integral_j(s, "power_w"))
    level = summarize([{"node": "h", "index": 0, "name": "NVIDIA H200", "samples": s, "unavailable": {}}],
                      output_tokens=75, hz=10, source="nvml", start_s=5.0, window_s=1.0)  # fmt: skip
    gpu = level.gpus[0]
    assert level.status == "MEASURED" and level.energy_source == "counter"
    assert level.energy_j == pytest.approx(375.0) and level.joules_per_output_token == pytest.approx(5.0)
    assert level.power_w.mean == pytest.approx(sum(watts) / 11) and level.power_w.max == 600.0
    assert level.throttle_share == pytest.approx(3 / 11) and gpu.throttle_reasons == ["hw_slowdown"]
    assert gpu.series.t_s[0] == 5.0 and gpu.series.power_w[-1] == 600.0 and gpu.memory_used_gib_max == 3.0


def test_without_a_counter_the_power_integral_stands_in_and_says_so() -> None:
    s = [x | {"energy_mj": None} for x in samples(11, [200.0] * 11, [0] * 11)]
    level = summarize([{"node": "h", "index": 0, "samples": s}], 10, 10, "nvml", 0.0, 1.0)
    assert level.energy_source == "power_integral" and level.energy_j == pytest.approx(200.0)
    none = [x | {"power_w": None} for x in s]
    out = summarize([{"node": "h", "index": 0, "samples": none, "unavailable": {"power_w": "Not Supported"}}],
                    10, 10, "nvml", 0.0, 1.0)  # fmt: skip
    assert out.status == "UNAVAILABLE" and "power_w: Not Supported" in (out.reason or "")


def test_the_watch_samples_each_gpu_at_10_hz_through_nvml() -> None:
    """At its default rate (no hz passed: the rate bench gets): catches a sampler at 5 Hz, or one whose
    samples bunch, by the median spacing of each GPU's samples (0.1 s within 10%; the median, since a
    stalled host skips a grid point now and then)."""
    nvml = Nvml(lib=FakeNvmlLib(count=2), device_count=2)  # type: ignore[arg-type]
    watch = LevelWatch(local=NodeGpus(loaded=(nvml, None)))
    t0 = time.monotonic()
    watch.start()
    time.sleep(0.75)
    watch.stop()
    ticks = int((time.monotonic() - t0) / 0.1) + 1  # 0.0, 0.1, ... s: a stalled host skips ticks, never bunches them
    level = watch.summary(output_tokens=100)
    assert level.status == "MEASURED" and [g.index for g in level.gpus] == [0, 1] and level.hz == 10
    for g in level.gpus:
        assert float(np.median(np.diff(g.series.t_s))) == pytest.approx(0.1, rel=0.1), g.series.t_s
    assert all(ticks - 3 <= g.samples <= ticks + 1 for g in level.gpus), ([g.samples for g in level.gpus], ticks)
    assert level.gpus[0].name == "NVIDIA H200" and level.power_w.max == pytest.approx(613.626)
    assert level.energy_source == "counter" and level.energy_j == 0.0  # the fake's counter stands still


def test_bench_without_a_gpu_says_unavailable_with_the_reason(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.002)) as srv:
        cfg = BenchConfig.model_validate({"target": {"url": srv.url}, "workload": {"input_len": 8, "output_len": 4},
                                          "load": {"requests": 4, "warmup": 0}})  # fmt: skip
        summary = asyncio.run(run_bench(cfg))
    level = summary.levels[0].gpu_telemetry
    assert level is not None and level.status == "UNAVAILABLE" and level.source == "nvml"
    assert level.reason and level.reason.split(": ", 1)[1].startswith(("nvidia-ml-py is not installed", "NVML"))


def test_ray_nodes_offering_seatrial_gpu_are_watched_through_an_actor(ray_cluster: RayCluster) -> None:
    watch = LevelWatch(ray_cluster.address)
    try:
        watch.start()
        watch.stop()
        level = watch.summary(10)
    finally:
        watch.close()
    assert level.status == "UNAVAILABLE" and level.source == "ray"
    assert "nvidia-ml-py is not installed" in (level.reason or "") or "NVML" in (level.reason or "")
