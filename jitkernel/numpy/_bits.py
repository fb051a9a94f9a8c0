"""packbits and unpackbits inside a trace, from elementwise ops, reshapes and a sum (no
primitive of their own, so they fuse with their neighbours):

- packbits: `a != 0` as uint8 bits, the packing axis moved last and padded with zero bits to a
  multiple of 8, grouped by 8 and summed against the bit weights (128, 64, ..., 1 for 'big',
  1, 2, ..., 128 for 'little') in uint8: at most 255, so the sum is exact.
- unpackbits: each byte shifted right by 7, 6, ..., 0 ('big') or 0, ..., 7 ('little') and
  masked with 1, the (n, 8) bits flattened to 8n, then `count` keeps the first bits (padding
  with zero bits past 8n) or drops -count from the end.

NumPy's argument checks (the input dtype, axis, bitorder strings) are NumPy's own: its function
runs at trace time on a tiny zero array of the same dtype and rank, so the exception types and
messages are NumPy's, including its parsing of bitorder (packbits accepts any string starting
with 'big', unpackbits any starting with 'b').

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.packbits(a > 0))(np.array([1, -1, 2, 0, 0, 0, 0, 0, 3]))
array([160, 128], dtype=uint8)
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..trace.operands import context_of, lift, normalize_axis
from ._reductions import sum as _sum
from ._shape import concatenate, moveaxis, ravel, reshape
from ._ufuncs import apply_ufunc

__all__ = ["packbits", "unpackbits"]

_U8 = np.dtype(np.uint8)


def _numpy_checks(np_func: Any, t: Any, **kwargs: Any) -> bool:
    """Run NumPy's own function on a zero array of t's dtype and rank (its argument errors are
    raised here); whether the bit order is 'big', read from the result of packing or unpacking
    a single 1 bit (NumPy's own reading of the bitorder string)."""
    probe = np.zeros((1,) * t.ndim, dtype=t.dtype)
    np_func(probe, **kwargs)
    kwargs.pop("axis", None)
    if np_func is np.packbits:
        return int(np.packbits(np.ones(1, np.uint8), **kwargs)[0]) == 128
    return int(np.unpackbits(np.ones(1, np.uint8), **kwargs)[-1]) == 1


def _last_axis(t: Any, axis: Any) -> tuple[Any, int | None]:
    """t with the working axis last (raveled for axis=None or a 0-d input, as NumPy does) and
    where to move it back (None: the result is 1-d)."""
    if axis is None or t.ndim == 0:
        return ravel(t), None
    ax = normalize_axis(operator.index(axis), t.ndim)
    return moveaxis(t, ax, -1), ax


def _zero_bits(shape: tuple, n: int) -> np.ndarray:
    return np.zeros(tuple(shape[:-1]) + (n,), _U8)


def packbits(a: Any, /, axis: Any = None, bitorder: str = "big") -> Any:
    """numpy.packbits: uint8 bytes of the nonzero flags of a (integer or bool) along axis."""
    ctx = context_of(a)
    if ctx is None:
        return np.packbits(a, axis=axis, bitorder=bitorder)
    t = lift(ctx, a)
    big = _numpy_checks(np.packbits, t, axis=axis, bitorder=bitorder)
    t, back = _last_axis(t, axis)
    bits = apply_ufunc(np.not_equal, t, 0).astype(_U8)
    n = bits.shape[-1]
    pad = -n % 8
    if pad:
        bits = concatenate([bits, _zero_bits(bits.shape, pad)], axis=-1)
    groups = reshape(bits, tuple(bits.shape[:-1]) + ((n + pad) // 8, 8))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if big else [1, 2, 4, 8, 16, 32, 64, 128], _U8)
    packed = _sum(apply_ufunc(np.multiply, groups, weights), axis=-1, dtype=_U8)
    return packed if back is None else moveaxis(packed, -1, back)


def unpackbits(a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> Any:
    """numpy.unpackbits: the bits of uint8 a along axis, count of them (None: all 8n)."""
    ctx = context_of(a)
    if ctx is None:
        return np.unpackbits(a, axis=axis, count=count, bitorder=bitorder)
    t = lift(ctx, a)
    big = _numpy_checks(np.unpackbits, t, axis=axis, bitorder=bitorder)
    count = None if count is None else operator.index(count)
    t, back = _last_axis(t, axis)
    shifts = np.array([7, 6, 5, 4, 3, 2, 1, 0] if big else [0, 1, 2, 3, 4, 5, 6, 7], _U8)
    expanded = reshape(t, tuple(t.shape) + (1,))
    bits = apply_ufunc(np.bitwise_and, apply_ufunc(np.right_shift, expanded, shifts), np.uint8(1))
    bits = reshape(bits, tuple(t.shape[:-1]) + (8 * t.shape[-1],))
    bits = _counted(bits, count)
    return bits if back is None else moveaxis(bits, -1, back)


def _counted(bits: Any, count: int | None) -> Any:
    """The first `count` bits (zero bits appended past the end), or all but the last -count."""
    n = bits.shape[-1]
    if count is None or count == n:
        return bits
    if count < 0:
        if -count > n:
            raise ValueError("-count larger than number of elements")
        return bits[..., :n + count]
    if count < n:
        return bits[..., :count]
    return concatenate([bits, _zero_bits(bits.shape, count - n)], axis=-1)
