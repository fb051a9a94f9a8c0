"""NumPy semantic decisions that more than one renderer needs, each decided once here.

The CPU renderer (LLVM builder code, backends/cpu) and the CUDA renderer (C source,
backends/cuda) both read these tables and functions, so a decision (what a reduction
accumulates in, which of two equal zeros `maximum` keeps, how a float becomes an integer)
cannot drift between them. What is decided here is data or a small rule; how each backend
expresses it (an LLVM instruction, a C expression) stays in the backend.

The decisions that are small programs rather than data (integer and float floor division and
remainder, shifts by >= the bit width, `sign`, integer `reciprocal` and `power`, float
`maximum`/`minimum` and `fmax`/`fmin`) are written once too, in backends/semantic_rules.py, over generic
operations each backend translates.

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


def _iterated_axes(shape: tuple[int, ...]) -> list[int]:
    """The axes NumPy's iterator iterates: it gives an axis of extent 1 stride 0 in every
    operand, so such an axis coalesces with its neighbours and never splits or ends a run."""
    return [d for d, n in enumerate(shape) if n != 1]


def reduction_inner_loop_kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Does NumPy's inner loop of a reduction of a C-contiguous operand run along a kept axis
    (the output advancing with it: rows added element by element, in order, `x.sum(axis=0)` of
    a matrix)? It is the last axis of extent other than 1, so `(n, 1).sum(axis=0)` is a
    pairwise sum over n, as `(n,).sum()` is. With every extent 1 the last axis decides (the
    order cannot matter there).

    >>> reduction_inner_loop_kept((5, 3), (0,)), reduction_inner_loop_kept((5, 1), (0,))
    (True, False)
    """
    if all(shape[a] <= 1 for a in axes):
        # Nothing to order (one element or none per output): the kernel form the memory order
        # gives, so such reductions fuse as copies with their neighbours, as before.
        return len(shape) - 1 not in axes and len(axes) < len(shape)
    long = _iterated_axes(shape) or list(range(len(shape)))
    return bool(long) and long[-1] not in axes


def reduction_block(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """Elements NumPy's reduction of a C-contiguous operand reduces per call of its inner loop
    (pairwise, for a float sum): the iterator coalesces the trailing run of reduced axes, axes
    of extent 1 (kept or reduced) belonging to every run.

    >>> reduction_block((4, 5, 6), (0, 2)), reduction_block((4, 1, 6), (0, 2))
    (6, 24)
    """
    block = 1
    for d in reversed(_iterated_axes(shape)):
        if d not in axes:
            break
        block *= shape[d]
    return block


def max_min_tie_keeps_first(dt: np.dtype) -> bool:
    """Of two equal floats (0.0 and -0.0), does NumPy's maximum/minimum return the first
    operand? The float16 loop does (`a >= b ? a : b`); the float32/float64 loops return the
    second (the x86 max/min instructions of NumPy's SIMD loops). A max/min reduction therefore
    keeps the sign of the first zero (float16) or of the last one (float32/float64)."""
    return dt.itemsize == 2


def float_to_int_plan(src: np.dtype, dst: np.dtype) -> tuple:
    """How NumPy (C casts on x86) converts a float of `src` to the integer `dst`, as a plan every
    renderer and the interpreter follow. Every step is a signed conversion `cvt(width)`:
    truncation toward zero, and for NaN, infinities and values outside the signed range x86's
    "integer indefinite", the range's minimum (never LLVM's poison or CUDA's saturation); the
    result keeps the low bits.

    - ("signed", width): cvt(width), then the low bits of `dst` (int8 of 300.0 is 44; uint32 of
      -3e9 is 1294967296, of NaN 0).
    - ("u64",): values >= 2**63 convert x - 2**63 through cvt(64) and set the top bit back
      (xor), the others through cvt(64): NaN gives 2**63, inf and 2**64 give 0, -3.0 gives
      2**64 - 3.
    float -> uint32 goes through cvt(64): NumPy's C cast of one value, which is its answer for
    scalars, 0-d arrays and arrays shorter than a vector, without a warning where the value is
    inside int64. NumPy's vector loops give 2**31 instead for values below 0 or at or above
    2**32 (and 0 for some), but only in whole blocks of an array and with "invalid value
    encountered in cast": the answer then depends on the element's position, so the one-value
    answer is the one every element gets here.
    Measured against NumPy 2 on this machine for every float source, integer destination and
    special value (tests/test_ufuncs.py::test_float_to_int_casts_of_special_values)."""
    if dst.kind == "u" and dst.itemsize == 8:
        return ("u64",)
    return ("signed", 64 if dst.itemsize >= 4 and not (dst.kind == "i" and dst.itemsize == 4) else 32)


def signed_conversion_bounds(width: int, src: np.dtype) -> tuple[float, bool, float]:
    """(low, strict, high) such that a float `x` of `src` truncates into the signed `width`-bit
    range exactly when `x > low` (strict) or `x >= low` (not strict), and `x < high`: the lower
    bound is 2**(width-1) + 1 below zero where `src` can hold it, else 2**(width-1) itself."""
    lo = -(1 << (width - 1))
    below = float(np.array(lo - 1, dtype=np.float64).astype(src if src.itemsize >= 4 else np.float32))
    if int(below) == lo - 1:
        return float(lo - 1), True, float(-lo)
    return float(lo), False, float(-lo)
