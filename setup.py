"""The one compiled part: the converter's per-element loops. Optional: without a C compiler the
install goes on and the converter uses its numpy path (``seatrial convert`` reports which it used)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "seatrial.checkpoint.convert._fp8",
            ["src/seatrial/checkpoint/convert/_fp8.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
