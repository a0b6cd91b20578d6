"""The compiled parts: the converter's per-element loops and the audit's per-tensor header loop.
Both are optional: without a C compiler the install goes on and the same code runs in numpy / Python
(``seatrial convert`` reports which loops it used)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "seatrial.checkpoint.convert._fp8",
            ["src/seatrial/checkpoint/convert/_fp8.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "seatrial.checkpoint._columns",
            ["src/seatrial/checkpoint/_columns.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
