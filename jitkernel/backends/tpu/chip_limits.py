"""What the TPU's compiler cannot take, read from the computation that would reach it.

XLA's TPU compiler has no float64 or complex128 type: it rewrites them into pairs of 32-bit
values, and for some operations it has no rewrite at all. Measured on a v5e with JAX 0.10.2: a
64-bit integer `dot_general` fails with `UNIMPLEMENTED: While rewriting computation to not
contain X64 element types`, and a float64 -> complex128 convert aborts the whole process
(`xprecision_rewriter.cc: Unsupported CVT X{64|128} expansion`, SIGABRT: in a notebook, the
kernel dies). The IR check (`holds_float64`) sends a program with float64 values to the host CPU
and the rules route what they can (a 64-bit integer product is a host step, rules_arrays.py);
this module checks the StableHLO text itself, after every rule ran, so that a complex128 value or
a 64-bit integer product that a rule or JAX introduced never reaches the chip's compiler: the
program is compiled for the host CPU instead, with a warning. (float64 itself is allowed there:
rules compute float32 products through it on purpose, where the chip's pair of float32 values
holds them exactly: the complex multiply's `fma`, docs/tpu.md.)

>>> refuse_chip_aborts("%0 = stablehlo.add %a, %b : tensor<4xf32>")
>>> try:
...     refuse_chip_aborts("%0 = stablehlo.convert %a : (tensor<3xf64>) -> tensor<3xcomplex<f64>>")
... except ChipWouldAbort as e:
...     print(e.what)
complex128
"""
from __future__ import annotations

import re

# a product or convolution of 64-bit integers (tensor<2x2xi64>, tensor<ui64>: its operands or result)
_WIDE_INT_PRODUCT = re.compile(r"stablehlo\.(dot_general|dot|convolution)\b.*[<x]u?i64>")


class ChipWouldAbort(Exception):
    """The lowered program holds a type the chip's compiler refuses or aborts on (`what`)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what

    def note(self, name: str) -> str:
        return (f"jitkernel: {name} holds {self.what} after lowering, which the TPU's compiler does not "
                "support (it emulates 64-bit types with 32-bit pairs, and aborts on some of their operations); it "
                "runs on the host CPU through XLA instead (docs/tpu.md, \"Dtypes on the TPU\")")


def refuse_chip_aborts(hlo_text: str) -> None:
    """Raise ChipWouldAbort when the StableHLO text holds complex128 or a 64-bit integer product."""
    if "complex<f64>" in hlo_text:
        raise ChipWouldAbort("complex128")
    if any(_WIDE_INT_PRODUCT.search(line) for line in hlo_text.splitlines() if "stablehlo.d" in line
           or "stablehlo.conv" in line):
        raise ChipWouldAbort("a 64-bit integer product")


__all__ = ["ChipWouldAbort", "refuse_chip_aborts"]
