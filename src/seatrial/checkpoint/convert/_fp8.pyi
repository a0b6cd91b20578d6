# The compiled loops of _fp8.c (see kernels.py, which wraps them).
from typing_extensions import Buffer

def max_magnitude16(src: Buffer, /) -> int: ...
def quantize16(
    lut: Buffer, src: Buffer, dst: Buffer, values: Buffer, deq: Buffer, cols: int, first: int, stride: int, /
) -> tuple[bool, int, int, int, int, float, float, float, float]: ...
