"""Reshaping functions not covered by numpy/_shape.py: resize, rollaxis, matrix_transpose.

resize repeats the flattened array to fill a static shape (np.tile, an index map); rollaxis
and matrix_transpose are transposes (views, as in NumPy). Each follows NumPy's Python
implementation and raises its errors.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.resize(a, (2, 3)))(np.arange(4.0)).tolist()
[[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, lift
from ..trace.views import fresh
from ._manipulation import tile
from ._shape import ravel, reshape, swapaxes, transpose

__all__ = ["resize", "rollaxis", "matrix_transpose"]


def resize(a: Any, new_shape: Any) -> Any:
    """numpy.resize: the flattened array repeated (and cut) to fill `new_shape` (static)."""
    ctx = context_of(a)
    if ctx is None:
        return np.resize(a, new_shape)
    if isinstance(new_shape, Tracer) or (isinstance(new_shape, (tuple, list)) and any(isinstance(n, Tracer) for n in new_shape)):
        raise UnsupportedOperationError("numpy.resize: a traced new_shape is not supported inside jit (the result's "
                                        "shape depends on it); pass it as a static argument (static_argnames)")
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    flat = ravel(lift(ctx, a))
    new_size = 1
    for n in new_shape:
        new_size *= n
        if n < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    if flat.size == 0 or new_size == 0:  # NumPy: zeros_like(a, shape=new_shape)
        return fresh(broadcast_to_shape(ctx, ctx.const(np.zeros((), flat.dtype)), tuple(new_shape)))
    repeats = (new_size + flat.size - 1) // flat.size
    out = reshape(tile(flat, repeats)[:new_size], tuple(new_shape))
    return ctx.bind1("convert", out, dtype=out.dtype)  # a new array in native byte order, as NumPy's


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """numpy.rollaxis: `axis` moved to before `start` (a view)."""
    ctx = context_of(a)
    if ctx is None:
        return np.rollaxis(a, axis, start)
    t = lift(ctx, a)
    n = t.ndim
    axis = normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not (0 <= start < n + 1):
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return t[...]
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(t, axes)


def matrix_transpose(x: Any, /) -> Any:
    """numpy.matrix_transpose: the last two axes swapped (a view)."""
    ctx = context_of(x)
    if ctx is None:
        return np.matrix_transpose(x)
    t = lift(ctx, x)
    if t.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {t.ndim}")
    return swapaxes(t, -1, -2)


resize.__jk_support__ = "partly: new_shape must be static"
