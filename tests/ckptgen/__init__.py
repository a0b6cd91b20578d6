"""Checkpoint generator for tests: real safetensors layouts, full shapes as sparse files."""

from tests.ckptgen.seed000 import SEED_TOTAL_SIZE, write_seed000
from tests.ckptgen.writer import Spec, header_bytes, write_safetensors, write_sharded

__all__ = ["SEED_TOTAL_SIZE", "Spec", "header_bytes", "write_safetensors", "write_seed000", "write_sharded"]
