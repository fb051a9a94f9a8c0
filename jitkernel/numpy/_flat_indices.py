"""Conversions between flat and multi-dimensional indices of a static shape: ravel_multi_index
and unravel_index on traced index arrays.

The shape (dims) is static; the indices are traced. Every error NumPy raises from the dtypes,
shapes, dims, mode and order alone is raised at trace time by calling NumPy itself on zeros of
the same dtypes and shapes (a zero index is in range unless an axis is empty, where NumPy
refuses any index). The one error that depends on the values, an index out of range ('raise'
mode), is a run-time check (`raise_if`) raising NumPy's ValueError.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([5, 7]))
(array([1, 1]), array([1, 3]))
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_shapes, broadcast_to_shape, context_of, lift
from ._statistics import raise_if
from ._ufuncs import apply_ufunc

__all__ = ["ravel_multi_index", "unravel_index"]

_INTP = np.dtype(np.intp)


def _static_dims(dims: Any, fname: str) -> tuple[int, ...]:
    items = dims if isinstance(dims, (tuple, list)) else (dims,)
    if isinstance(dims, Tracer) or any(isinstance(d, Tracer) for d in items):
        raise UnsupportedOperationError(
            f"numpy.{fname}: a traced shape (dims) is not supported inside jit (the result's layout depends on "
            "it); pass it as a static argument (static_argnames)")
    return tuple(int(d) for d in items)


def _zeros_like_operand(ctx: Any, x: Any) -> np.ndarray:
    """Zeros with x's dtype and shape: NumPy's checks of x that do not depend on its values."""
    t = lift(ctx, x if isinstance(x, Tracer) else np.asarray(x))
    return np.zeros(t.shape, t.dtype)


def _strides(dims: tuple[int, ...], order: str) -> list[int]:
    """The flat distance of one step along each axis, C (last axis fastest) or F order."""
    if order == "F":
        return [math.prod(dims[:i]) for i in range(len(dims))]
    return [math.prod(dims[i + 1:]) for i in range(len(dims))]


def _in_range(ctx: Any, idx: Tracer, n: int, message: str) -> Tracer:
    bad = apply_ufunc(np.logical_or, apply_ufunc(np.less, idx, 0), apply_ufunc(np.greater_equal, idx, n))
    return raise_if(idx, bad, "ValueError", message)


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Any:
    """numpy.ravel_multi_index: sum of each (wrapped, clipped or checked) index times its stride."""
    items = list(multi_index) if isinstance(multi_index, (tuple, list)) else [multi_index]
    ctx = context_of(*items)
    if ctx is None:
        return np.ravel_multi_index(multi_index, dims, mode=mode, order=order)
    dims = _static_dims(dims, "ravel_multi_index")
    if isinstance(multi_index, Tracer):  # an (N, ...) array: its rows are the N index arrays
        items = [multi_index[i] for i in range(multi_index.shape[0])] if multi_index.ndim else [multi_index]
    np.ravel_multi_index(tuple(_zeros_like_operand(ctx, x) for x in items), dims, mode=mode, order=order)
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    shape = broadcast_shapes(*[lift(ctx, x).shape for x in items])
    total = None
    for x, n, m, stride in zip(items, dims, modes, _strides(dims, order)):
        idx = lift(ctx, lift(ctx, x), _INTP)
        if m == "wrap":
            idx = apply_ufunc(np.remainder, idx, n)
        elif m == "clip":
            idx = apply_ufunc(np.maximum, apply_ufunc(np.minimum, idx, n - 1), 0)
        else:
            idx = _in_range(ctx, idx, n, "invalid entry in coordinates array")
        term = apply_ufunc(np.multiply, idx, stride)
        total = term if total is None else apply_ufunc(np.add, total, term)
    out = broadcast_to_shape(ctx, lift(ctx, total, _INTP), shape)
    return Tracer(ctx, out.ir_var)


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple:
    """numpy.unravel_index: one index array per axis, (flat // stride) % length, after a
    run-time check that every flat index is in range."""
    ctx = context_of(indices)
    if ctx is None:
        return np.unravel_index(indices, shape, order=order)
    dims = _static_dims(shape, "unravel_index")
    np.unravel_index(_zeros_like_operand(ctx, indices), dims, order=order)
    size = math.prod(dims)
    flat = lift(ctx, lift(ctx, indices), _INTP)
    flat = _in_range(ctx, flat, size, f"index out of bounds for array with size {size}")
    coords = []
    for n, stride in zip(dims, _strides(dims, order)):
        c = apply_ufunc(np.remainder, apply_ufunc(np.floor_divide, flat, stride), n)
        coords.append(Tracer(ctx, lift(ctx, c, _INTP).ir_var))
    return tuple(coords)


ravel_multi_index.__jk_support__ = "partly: dims must be static"
unravel_index.__jk_support__ = "partly: shape must be static"
