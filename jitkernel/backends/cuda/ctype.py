"""NumPy dtypes as C types of the generated CUDA source.

Registers: bool is `bool`, float16 is a `float` that always holds a float16 value (every
operation is computed in float32 and rounded back, as NumPy's float16 loops do). Memory: bool
is one byte (`unsigned char`), float16 its bits (`unsigned short`, converted by jk_h2f/jk_f2h).
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ...errors import UnsupportedOperationError

_INT = {("i", 1): "signed char", ("i", 2): "short", ("i", 4): "int", ("i", 8): "long long",
        ("u", 1): "unsigned char", ("u", 2): "unsigned short", ("u", 4): "unsigned int",
        ("u", 8): "unsigned long long"}


def check_dtype(dt: np.dtype) -> None:
    if dt.kind not in "biuf" or (dt.kind == "f" and dt.itemsize not in (2, 4, 8)):
        raise UnsupportedOperationError(f"dtype {dt} is not supported by the CUDA renderer yet")


def reg(dt: np.dtype) -> str:
    """The C type of a value of `dt` in a register."""
    check_dtype(dt)
    if dt.kind == "b":
        return "bool"
    if dt.kind == "f":
        return "double" if dt.itemsize == 8 else "float"
    return _INT[(dt.kind, dt.itemsize)]


def mem(dt: np.dtype) -> str:
    """The C type of an element of a buffer of `dt`."""
    check_dtype(dt)
    if dt.kind == "b":
        return "unsigned char"
    if dt.kind == "f" and dt.itemsize == 2:
        return "unsigned short"
    return reg(dt)


def load(ref: str, dt: np.dtype) -> str:
    """The register value (reg(dt)) of the memory element `ref` (an lvalue of type mem(dt))."""
    if dt.kind == "b":
        return f"({ref} != 0)"
    return f"jk_h2f({ref})" if is_half(dt) else ref


def store(ref: str, value: str, dt: np.dtype) -> str:
    """`ref = value;`: a register value of `dt` written to the memory element `ref`."""
    if dt.kind == "b":
        value = f"(unsigned char){value}"
    elif is_half(dt):
        value = f"jk_f2h({value})"
    return f"{ref} = {value};"


def wide_unsigned(dt: np.dtype) -> str:
    """The unsigned type integer arithmetic of `dt` wraps around in (C's signed overflow is
    undefined, and narrow types promote to int, where uint16 * uint16 can overflow)."""
    return "unsigned long long" if dt.itemsize == 8 else "unsigned int"


def is_half(dt: np.dtype) -> bool:
    return dt.kind == "f" and dt.itemsize == 2


def literal(value: object, dt: np.dtype) -> str:
    """A C expression of register type `reg(dt)` holding `value` exactly."""
    check_dtype(dt)
    if dt.kind == "b":
        return "true" if value else "false"
    if dt.kind in "iu":
        v = int(value) & ((1 << (8 * dt.itemsize)) - 1)
        if dt.kind == "i" and v >= 1 << (8 * dt.itemsize - 1):
            v -= 1 << (8 * dt.itemsize)
        if dt.itemsize == 8:
            if v == -(1 << 63):
                return "(-9223372036854775807LL - 1)"
            return f"{v}LL" if dt.kind == "i" else f"{v}ULL"
        return f"(({reg(dt)}){v})" if dt.itemsize < 4 or v < 0 else (f"{v}" if dt.kind == "i" else f"{v}u")
    v = float(value)
    if dt.itemsize == 2:
        v = float(np.float16(v))
    if dt.itemsize <= 4:
        v32 = np.float32(v)
        if not math.isfinite(v):
            return f"__int_as_float(0x{struct.unpack('<I', v32.tobytes())[0]:08x})"
        return float(v32).hex() + "f"
    if not math.isfinite(v):
        return f"__longlong_as_double(0x{struct.unpack('<Q', np.float64(v).tobytes())[0]:016x}LL)"
    return v.hex()
