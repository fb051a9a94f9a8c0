"""apply_along_axis and apply_over_axes inside a trace: NumPy's own loops, unrolled at trace
time. The callable runs on traced values (what it does is traced like any other code), so the
program holds one copy of func1d's operations per slice.

apply_along_axis calls func1d once per 1-D slice, as NumPy does (a function with side effects
or a data-dependent branch sees each slice); the slices are indexed from the static iteration
shape, so their number is known at trace time and is limited to MAX_SLICES: above it the call
is refused, naming jk.vmap (one traced call, batched), which is the scalable way to map a
function over the rows of an array. The results are stacked as NumPy stores them: the first
call fixes the dtype and the shape (later results are cast to that dtype and broadcast to that
shape, as NumPy's assignment into its buffer does), and the result's axes replace `axis`.

apply_over_axes is NumPy's loop: func(a, axis) for each axis in turn, its result kept when it
has a's rank, else given back the reduced axis (expand_dims), else ValueError.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.apply_along_axis(lambda r: r[::-1] * 2, 1, a))(np.arange(4.0).reshape(2, 2))
array([[2., 0.],
       [6., 4.]])
"""
from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.operands import context_of, lift, normalize_axis
from ._shape import astype, broadcast_to, expand_dims, reshape, stack, transpose

__all__ = ["apply_along_axis", "apply_over_axes"]

# Slices apply_along_axis unrolls at most: each is a copy of func1d's operations in the program.
MAX_SLICES = 4096


def _as_array(ctx: Any, value: Any) -> Any:
    """numpy.asanyarray of a func1d result, traced: a Python scalar becomes a strongly typed
    array of NumPy's default dtype for it, as asanyarray makes it."""
    if not hasattr(value, "ir_var"):
        value = np.asanyarray(value)
    t = lift(ctx, value)
    return lift(ctx, t, t.dtype)


def apply_along_axis(func1d: Callable, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """numpy.apply_along_axis: func1d on each 1-D slice along axis, results stacked."""
    ctx = context_of(arr)
    if ctx is None:
        return np.apply_along_axis(func1d, axis, arr, *args, **kwargs)
    t = lift(ctx, arr)
    ax = normalize_axis(operator.index(axis), t.ndim)
    dims = list(range(t.ndim))
    view = transpose(t, dims[:ax] + dims[ax + 1:] + [ax])
    outer = tuple(view.shape[:-1])
    count = math.prod(outer)
    if count == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    if count > MAX_SLICES:
        raise UnsupportedOperationError(
            f"numpy.apply_along_axis: {count} slices would put {count} copies of func1d in the program "
            f"(jitkernel unrolls at most {MAX_SLICES}); map the function with jk.vmap instead "
            "(jk.vmap(func1d, in_axes=axis)(arr) calls it once on the batch)")
    results = []
    for ind in itertools.product(*(range(n) for n in outer)):
        res = _as_array(ctx, func1d(view[ind + (Ellipsis,)], *args, **kwargs))
        if results:  # NumPy stores each result into a buffer shaped and typed by the first one
            first = results[0]
            res = broadcast_to(astype(res, first.dtype) if res.dtype != first.dtype else res, first.shape)
        results.append(res)
    first = results[0]
    buff = reshape(stack(results), outer + tuple(first.shape))
    bdims = list(range(buff.ndim))
    permute = bdims[:ax] + bdims[buff.ndim - first.ndim:] + bdims[ax:buff.ndim - first.ndim]
    return transpose(buff, permute)


def apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    """numpy.apply_over_axes: func(a, axis) for each axis, keeping a's rank."""
    ctx = context_of(a)
    if ctx is None:
        return np.apply_over_axes(func, a, axes)
    val = lift(ctx, a)
    n = val.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        axis = operator.index(axis)
        if axis < 0:
            axis = n + axis
        res = _as_array(ctx, func(val, axis))
        if res.ndim == val.ndim:
            val = res
        else:
            res = expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
            val = res
    return val


apply_along_axis.__jk_support__ = f"partly: unrolled per slice, at most {MAX_SLICES} slices (jk.vmap maps more)"
