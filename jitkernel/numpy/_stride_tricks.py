"""np.lib.stride_tricks.sliding_window_view and as_strided inside jit.

NumPy returns a read-only strided view whose last axes walk the windows. Here the windows are
gathered (numpy.take with a static (positions, window) index per windowed axis: a copy, one
library step per axis) and the result is marked as NumPy's read-only views are (a broadcast),
so a write into it raises NumPy's ValueError 'assignment destination is read-only'.
`writeable=True` (a writable view whose elements alias each other) is refused.

`as_strided(x, shape, strides)` with static shape and byte strides reads element
`sum(i_k * strides[k]) / itemsize` of x's buffer: a gather from `x.ravel()` with that static
index (x must be C-contiguous, so that its buffer is x.ravel(), and the strides multiples of the
item size). A copy, not a view: with `writeable=False` it is read-only as NumPy's; with NumPy's
default `writeable=True` a write into it (which NumPy would make through to x, and to every
element sharing its bytes) raises UnsupportedOperationError.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.lib.stride_tricks.sliding_window_view(x, 3).sum(-1))(np.arange(5.0)).tolist()
[3.0, 6.0, 9.0]
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.operands import broadcast_to_shape, context_of, lift
from ..trace.memory import c_strides, is_c_contiguous
from ..trace.tracer import Tracer
from ..trace.views import refuse_writes
from ._dispatch import register_function
from ._shape import moveaxis, ravel, reshape

__all__: list[str] = []


def _read_only(ctx: Any, t: Tracer) -> Tracer:
    """t as a view NumPy would not let anyone write into: row 0 of a broadcast (trace/views.py's
    check_writeable refuses writes through a broadcast, as NumPy's read-only flag does)."""
    wide = broadcast_to_shape(ctx, reshape(t, (1,) + t.shape), (2,) + t.shape)
    return wide[0]


def sliding_window_view(x: Any, window_shape: Any, axis: Any = None, *, subok: bool = False,
                        writeable: bool = False) -> Any:
    """numpy.lib.stride_tricks.sliding_window_view with a static window_shape and axis."""
    ctx = context_of(x)
    if ctx is None:
        return np.lib.stride_tricks.sliding_window_view(x, window_shape, axis, subok=subok, writeable=writeable)
    if writeable:
        raise UnsupportedOperationError(
            "sliding_window_view(..., writeable=True) is not supported inside jit: its windows share "
            "elements, so a write through one would change others; take the windows read-only and "
            "build the new array with np.where or a copy")
    window = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    if any(isinstance(w, Tracer) for w in window) or isinstance(axis, Tracer):
        raise UnsupportedOperationError(
            "sliding_window_view: a traced window_shape or axis is not supported inside jit (the "
            "result's shape would depend on it); pass it as a static argument")
    window = tuple(operator.index(w) for w in window)
    t = lift(ctx, x)
    if any(w < 0 for w in window):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        axes = tuple(range(t.ndim))
        if len(window) != len(axes):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                             f"{len(window)} window_shape elements and `x.ndim` is {t.ndim}.")
    else:
        from numpy.lib.array_utils import normalize_axis_tuple
        axes = normalize_axis_tuple(axis, t.ndim, allow_duplicate=True)
        if len(window) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(window)} "
                             f"window_shape elements and {len(axes)} axes elements.")
    trimmed = list(t.shape)
    for ax, dim in zip(axes, window):
        if trimmed[ax] < dim:
            raise ValueError("window shape cannot be larger than input array shape")
        trimmed[ax] -= dim - 1
    out = t
    for ax, dim in zip(axes, window):
        # out[..., i, ..., w_1.., w] = previous[..., i + w, ..., w_1..]: positions along `ax`
        # shrink to n - dim + 1 and the window index becomes a new last axis.
        n = out.shape[ax]
        index = np.arange(n - dim + 1)[:, None] + np.arange(dim)[None, :]
        if index.size == 0:
            shape = out.shape[:ax] + (n - dim + 1,) + out.shape[ax + 1:] + (dim,)
            out = broadcast_to_shape(ctx, lift(ctx, np.zeros((), t.dtype)), shape)
            continue
        taken = np.take(out, ctx.const(index.astype(np.intp)), axis=ax)
        out = moveaxis(taken, ax + 1, -1)
    _refuse_writes_into_source(t, "np.lib.stride_tricks.sliding_window_view")
    return _read_only(ctx, lift(ctx, out))


register_function(np.lib.stride_tricks.sliding_window_view, sliding_window_view)
sliding_window_view.__jk_support__ = ("partly: static window_shape and axis; a read-only copy (writes raise as "
                                      "NumPy's), writeable=True refused")


def _static_ints(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, Tracer) or (np.iterable(value) and any(isinstance(v, Tracer) for v in value)):
        raise UnsupportedOperationError(
            f"as_strided: a traced {what} is not supported inside jit (the result's shape and the elements "
            "it reads would depend on it); pass it as a static argument")
    return tuple(operator.index(v) for v in (value if np.iterable(value) else (value,)))


def as_strided(x: Any, shape: Any = None, strides: Any = None, subok: bool = False, writeable: bool = True) -> Any:
    """numpy.lib.stride_tricks.as_strided of a traced C-contiguous array with static shape and
    byte strides: a gather of the elements NumPy's view would read (a copy)."""
    ctx = context_of(x)
    if ctx is None or not isinstance(x, Tracer):
        if getattr(type(x), "_jk_datadep", False):
            raise UnsupportedOperationError(
                "as_strided of a value of data-dependent length (x[mask], np.unique, ...) is not supported inside "
                "jit: its buffer is padded to the largest length")
        return np.lib.stride_tricks.as_strided(x, shape, strides, subok=subok, writeable=writeable)
    t = lift(ctx, x)
    itemsize = t.dtype.itemsize
    if not is_c_contiguous(t):
        raise UnsupportedOperationError(
            "as_strided of an array that is not C-contiguous (a transposed or strided view, a Fortran-ordered "
            "argument) is not supported inside jit: NumPy reads its bytes as they lie in its base; pass "
            "np.ascontiguousarray(x) (NumPy's as_strided of that copy reads what jitkernel reads)")
    shape = t.shape if shape is None else _static_ints(shape, "shape")
    byte_strides = tuple(s * itemsize for s in c_strides(t.shape)) if strides is None \
        else _static_ints(strides, "strides")
    if len(byte_strides) != len(shape):
        raise ValueError("mismatch in length of strides and shape")
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    if any(s % itemsize for s in byte_strides):
        raise UnsupportedOperationError(
            f"as_strided with strides {byte_strides} that are not multiples of the item size ({itemsize} bytes "
            f"of {t.dtype}) is not supported inside jit: its elements would straddle two of x's")
    element_strides = tuple(s // itemsize for s in byte_strides)
    index = np.zeros(shape, np.intp)
    for k, (n, s) in enumerate(zip(shape, element_strides)):
        index = index + (np.arange(n, dtype=np.intp) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
    if index.size and (index.min() < 0 or index.max() >= t.size):
        raise UnsupportedOperationError(
            f"as_strided(shape={shape}, strides={byte_strides}) reads elements {int(index.min())}..{int(index.max())} "
            f"of an array of {t.size}: NumPy would read memory outside the array (undefined values); jitkernel "
            "supports only views inside the array's own elements")
    if index.size == 0:
        out = broadcast_to_shape(ctx, lift(ctx, np.zeros((), t.dtype)), shape)
    else:
        out = np.take(ravel(t), ctx.const(index), axis=0)
    _refuse_writes_into_source(t, "np.lib.stride_tricks.as_strided")
    if not writeable:
        return _read_only(ctx, lift(ctx, out))
    out = lift(ctx, out)
    refuse_writes(out, "a write into the result of np.lib.stride_tricks.as_strided(..., writeable=True) is not "
                       "supported inside jit: NumPy writes through to the original array (and, where the view's "
                       "elements overlap, to every element sharing those bytes), but jitkernel's result is a "
                       "copy; pass writeable=False to read, and build the new values with np.where or a copy")
    return out


def _refuse_writes_into_source(t: Tracer, what: str) -> None:
    """NumPy's result is a view: a later write into `t` (or its base) would show in it, but the
    copy jitkernel made would keep the old values. Such a write raises instead."""
    refuse_writes(t, f"a write into an array after {what} of it is not supported inside jit: NumPy's result "
                     "is a view that would see the write, jitkernel's is a copy that would not; take the "
                     f"{what.rsplit('.', 1)[-1]} after the write, or write into a copy (x = x.copy())")


as_strided.__jk_support__ = ("partly: static shape and strides of a C-contiguous array, inside its elements; a copy "
                             "(writeable=False: read-only as NumPy's; writeable=True: writes raise)")
