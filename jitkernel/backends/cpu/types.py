"""NumPy dtypes as LLVM types: registers hold bool as i1, memory holds it as i8."""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def reg_type(dt: np.dtype) -> ir.Type:
    if dt.kind == "b":
        return I1
    if dt.kind in "iu":
        return ir.IntType(dt.itemsize * 8)
    return {2: F16, 4: F32, 8: F64}[dt.itemsize]


def mem_type(dt: np.dtype) -> ir.Type:
    return I8 if dt.kind == "b" else reg_type(dt)


def is_float(dt: np.dtype) -> bool:
    return dt.kind == "f"


def is_signed(dt: np.dtype) -> bool:
    return dt.kind == "i"


def constant(dt: np.dtype, value: object) -> ir.Constant:
    """An LLVM constant of dtype `dt` holding the (already representable) Python value."""
    t = reg_type(dt)
    if dt.kind == "b":
        return ir.Constant(t, int(bool(value)))
    if dt.kind in "iu":
        v = int(value)
        bits = dt.itemsize * 8
        return ir.Constant(t, v & ((1 << bits) - 1))
    v = float(value)
    if dt.itemsize == 2:
        # llvmlite prints half constants through a double; exact for every finite half value.
        return ir.Constant(t, float(np.float16(v)))
    if dt.itemsize == 4:
        return ir.Constant(t, float(np.float32(v)))
    return ir.Constant(t, v)
