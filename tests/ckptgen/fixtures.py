"""Session fixtures shared by tests/checkpoint and tests/plan (import them in a conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.ckptgen.seed000 import write_seed000

from seatrial.checkpoint import AuditReport, Inventory, scan, summarize
from seatrial.plan.source import Source, source_from_inventory


@pytest.fixture(scope="session")
def seed000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The original replica: BF16 PLE in one 95.37 GiB shard (sparse)."""
    root = tmp_path_factory.mktemp("seed000") / "Qwen3.8-Flash-Next-NVFP4"
    write_seed000(root)
    return root


@pytest.fixture(scope="session")
def seed000_converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The replica after seed 000's conversion: FP8 PLE in 128 files, BF16 lm_head."""
    root = tmp_path_factory.mktemp("seed000c") / "Qwen3.8-Flash-Next-NVFP4-PLE-FP8"
    write_seed000(root, converted=True)
    return root


@pytest.fixture(scope="session")
def seed000_inventory(seed000: Path) -> Inventory:
    return scan(seed000)


@pytest.fixture(scope="session")
def seed000_converted_inventory(seed000_converted: Path) -> Inventory:
    return scan(seed000_converted)


@pytest.fixture(scope="session")
def seed000_report(seed000_inventory: Inventory) -> AuditReport:
    return summarize(seed000_inventory)


@pytest.fixture(scope="session")
def seed000_converted_report(seed000_converted_inventory: Inventory) -> AuditReport:
    return summarize(seed000_converted_inventory)


@pytest.fixture(scope="session")
def seed000_source(seed000_inventory: Inventory) -> Source:
    """The replica as the planner reads it (scanned once per session)."""
    return source_from_inventory(seed000_inventory)


@pytest.fixture(scope="session")
def seed000_converted_source(seed000_converted_inventory: Inventory) -> Source:
    return source_from_inventory(seed000_converted_inventory)
