"""Session fixtures shared by tests/checkpoint and tests/plan (import them in a conftest).

Each conftest registers its own copy of these fixtures, so the replicas and their scans are cached
at module level: both test folders see one written replica and one scan per session.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from tests.ckptgen.seed000 import write_seed000

from seatrial.checkpoint import AuditReport, Inventory, scan, summarize
from seatrial.plan.source import Source, source_from_inventory


@cache
def _replica(base: Path, converted: bool) -> Path:
    name = "Qwen3.8-Flash-Next-NVFP4-PLE-FP8" if converted else "Qwen3.8-Flash-Next-NVFP4"
    root = base / ("seed000c" if converted else "seed000") / name
    write_seed000(root, converted=converted)
    return root


@cache
def _inventory(root: Path) -> Inventory:
    return scan(root)


@pytest.fixture(scope="session")
def seed000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The original replica: BF16 PLE in one 95.37 GiB shard (sparse)."""
    return _replica(tmp_path_factory.getbasetemp(), False)


@pytest.fixture(scope="session")
def seed000_converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The replica after seed 000's conversion: FP8 PLE in 128 files, BF16 lm_head."""
    return _replica(tmp_path_factory.getbasetemp(), True)


@pytest.fixture(scope="session")
def seed000_inventory(seed000: Path) -> Inventory:
    return _inventory(seed000)


@pytest.fixture(scope="session")
def seed000_converted_inventory(seed000_converted: Path) -> Inventory:
    return _inventory(seed000_converted)


@pytest.fixture(scope="session")
def seed000_report(seed000_inventory: Inventory) -> AuditReport:
    return summarize(seed000_inventory)


@pytest.fixture(scope="session")
def seed000_converted_report(seed000_converted_inventory: Inventory) -> AuditReport:
    return summarize(seed000_converted_inventory)


@pytest.fixture(scope="session")
def seed000_source(seed000_inventory: Inventory) -> Source:
    """The replica as the planner reads it."""
    return source_from_inventory(seed000_inventory)


@pytest.fixture(scope="session")
def seed000_converted_source(seed000_converted_inventory: Inventory) -> Source:
    return source_from_inventory(seed000_converted_inventory)
