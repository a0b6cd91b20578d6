"""Fixtures: the seed-000 replica (original and converted), written once per session as sparse files."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # makes ``tests.ckptgen`` importable

from tests.ckptgen.fixtures import (  # noqa: F401
    seed000,
    seed000_converted,
    seed000_converted_inventory,
    seed000_converted_report,
    seed000_inventory,
    seed000_report,
)
