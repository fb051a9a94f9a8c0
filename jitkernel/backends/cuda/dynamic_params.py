"""Run-time parameters of shape-generic programs on the CUDA backend (docs/gpu.md, "Dynamic
shapes on the GPU").

A shape-generic kernel program (fusion/params.py) holds `Param`s where a size, an index-map
coefficient or a literal varies between calls. The renderer writes each one as a read of the
kernel argument `const long long* jk_params` (slot `Param.index`: an int64, or a float64's
bits), so the translation unit is the same text for every size: the compiled module (cubin,
emulator library) is reused, and a new size costs tracing, fusion and rendering only.

Renderer decisions (a rows or a columns kernel, an extent-1 loop dropped) read the value the
parameter has in the program being rendered (`Ext` is an int holding that value and the C
text). They are safe because reuse renders the new program too and reuses the module only when
the source text is identical (shape_template.CudaTemplate.fit): a decision that would change for the new
sizes changes the text, and the program is compiled afresh.

>>> from jitkernel.fusion.params import Param
>>> e = run_time_extent(Param(2, "int", 7))
>>> int(e), _ll(e), _ll(5)
(7, 'jk_params[2]', '5LL')
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion.kernel_ir import KernelProgram
from ...fusion.params import Param, constants
from . import ctype


class Ext(int):
    """An extent that is a run-time parameter (or a product with one): the int is its value in
    the program being rendered, `c` its C expression. Formatted (comments) as the C text, so
    that the source does not depend on the value."""

    c: str

    def __new__(cls, value: int, c: str) -> "Ext":
        self = super().__new__(cls, value)
        self.c = c
        return self

    def __format__(self, spec: str) -> str:
        return self.c if not spec else int.__format__(int(self), spec)


def run_time_extent(p: Param) -> Ext:
    return Ext(int(p.value), f"jk_params[{p.index}]")


def _ll(n: Any) -> str:
    """The C `long long` text of an extent, coefficient or offset (int, Param or Ext)."""
    if isinstance(n, Param):
        n = run_time_extent(n)
    if isinstance(n, Ext):
        return n.c
    return f"{int(n)}LL"


def _is_int(n: Any, value: int) -> bool:
    """Is `n` the compile-time integer `value` (never true of a run-time parameter)?"""
    return not isinstance(n, (Param, Ext)) and n == value


def extent(n: object) -> int:
    """An extent as an int; a run-time parameter (fusion/params.py) as an `Ext`: its value in the
    program being rendered (for decisions) and its C text (a kernel argument slot)."""
    if isinstance(n, Param):
        return run_time_extent(n)
    if isinstance(n, Ext):
        return n
    if not isinstance(n, (int, np.integer)):
        raise UnsupportedOperationError(f"a run-time extent ({n}) is not supported by the CUDA backend yet")
    return int(n)


def extent_product(items: list) -> int:
    """The product of extents; an `Ext` (value and C text) when any factor is one."""
    items = [extent(n) for n in items]
    value = int(np.prod([int(n) for n in items], dtype=np.int64))
    if not any(isinstance(n, Ext) for n in items):
        return value
    return Ext(value, "(" + " * ".join(_ll(n) for n in items) + ")")


def run_time_literal(p: Param, dt: np.dtype) -> str:
    """A literal that varies between calls, read from its parameter slot (float64 bits for a
    float, fusion/params.parameter_values) and converted to the register type of `dt`."""
    slot = f"jk_params[{p.index}]"
    if p.kind == "float":
        return f"(({ctype.reg(dt)})__longlong_as_double({slot}))"
    if dt.kind == "b":
        return f"({slot} != 0)"
    return f"(({ctype.reg(dt)}){slot})"


def has_params(kp: KernelProgram) -> bool:
    """Does `kp` hold run-time parameters (its kernels then take `jk_params`)? Memoised on kp."""
    memo = kp.__dict__.get("_cuda_has_params")
    if memo is None:
        memo = kp.__dict__["_cuda_has_params"] = any(isinstance(v, Param) for v in constants(kp)[1])
    return memo


_SHAPE = re.compile(r"\[[0-9, ]*\]")


def stable_text(kp: KernelProgram, text: str) -> str:
    """Comment text (a kernel's fused equations) without the shapes in it when `kp` is shape
    generic: the source of every size must be the same text."""
    return _SHAPE.sub("[..]", text) if has_params(kp) else text
