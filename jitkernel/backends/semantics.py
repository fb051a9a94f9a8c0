"""NumPy semantic decisions that more than one renderer needs, each decided once here.

The CPU renderer (LLVM builder code, backends/cpu) and the CUDA renderer (C source,
backends/cuda) both read these tables and functions, so a decision (what a reduction
accumulates in, which of two equal zeros `maximum` keeps, how a float becomes an integer)
cannot drift between them. What is decided here is data or a small rule; how each backend
expresses it (an LLVM instruction, a C expression) stays in the backend.

Decisions both backends implement as code and that are therefore still written twice
(backends/cpu/ops.py and backends/cuda/ops.py; the emulator tests compare both with NumPy):
integer floor division/remainder (x // 0 == x % 0 == 0, MIN // -1 == MIN, Python's sign rule),
float floor division/remainder (npy_divmod), shifts by >= the bit width, integer `reciprocal`,
`sign` of NaN and of zeros, integer `power` by squaring (negative exponents raise).

>>> accumulator_dtype("sum", np.dtype(np.float16))
dtype('float32')
>>> reduce_identity("max", np.dtype(np.int8))
-128
>>> max_min_tie_keeps_first(np.dtype(np.float16)), max_min_tie_keeps_first(np.dtype(np.float32))
(True, False)
"""
from __future__ import annotations

import numpy as np

# NumPy ufunc -> libm base name (the float64 function; float32 appends "f"). Unary, then binary.
MATH_UNARY = {
    "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
    "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint",
    "absolute": "fabs", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt",
}
MATH_BINARY = {
    "power": "pow", "fmax": "fmax", "fmin": "fmin", "copysign": "copysign", "arctan2": "atan2",
    "hypot": "hypot", "fmod": "fmod",
}

REDUCTIONS = ("sum", "prod", "max", "min", "and", "or", "argmax", "argmin")


def accumulator_dtype(reduce: str, dt: np.dtype) -> np.dtype:
    """The dtype a reduction accumulates in: float16 sums and products in float32 (rounded to
    float16 between NumPy blocks on the CPU, once at the end on CUDA), everything else in its
    own dtype (integers wrap around as NumPy's do)."""
    if dt == np.float16 and reduce in ("sum", "prod"):
        return np.dtype(np.float32)
    return dt


def reduce_identity(reduce: str, dt: np.dtype) -> bool | int | float:
    """The starting value of a reduction over `dt` (the accumulator's dtype)."""
    if reduce in ("sum", "or"):
        return False if dt.kind == "b" else 0
    if reduce in ("prod", "and"):
        return True if dt.kind == "b" else 1
    big = reduce in ("min", "argmin")
    if dt.kind == "f":
        return float("inf") if big else float("-inf")
    if dt.kind == "b":
        return big
    info = np.iinfo(dt)
    return int(info.max if big else info.min)


def max_min_tie_keeps_first(dt: np.dtype) -> bool:
    """Of two equal floats (0.0 and -0.0), does NumPy's maximum/minimum return the first
    operand? The float16 loop does (`a >= b ? a : b`); the float32/float64 loops return the
    second (the x86 max/min instructions of NumPy's SIMD loops). A max/min reduction therefore
    keeps the sign of the first zero (float16) or of the last one (float32/float64)."""
    return dt.itemsize == 2


def float_to_int_width(dst: np.dtype) -> int:
    """NumPy's float -> integer cast (C casts on x86) converts through a signed 32- or 64-bit
    integer and truncates to `dst`; uint64 converts values >= 2**63 through the unsigned
    instruction (float_to_uint64_split). Out-of-range values are undefined in NumPy too."""
    return 64 if dst.itemsize >= 4 and not (dst.kind == "i" and dst.itemsize == 4) else 32


def float_to_uint64_split() -> float:
    """Below this value a float -> uint64 cast goes through the signed instruction (so -3.0
    becomes 2**64 - 3, as C on x86 does)."""
    return 2.0 ** 63
