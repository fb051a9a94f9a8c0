"""np.lib.stride_tricks.sliding_window_view inside jit.

NumPy returns a read-only strided view whose last axes walk the windows. Here the windows are
gathered (numpy.take with a static (positions, window) index per windowed axis: a copy, one
library step per axis) and the result is marked as NumPy's read-only views are (a broadcast),
so a write into it raises NumPy's ValueError 'assignment destination is read-only'.
`writeable=True` (a writable view whose elements alias each other) is refused.

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
from ..trace.tracer import Tracer
from ._dispatch import register_function
from ._shape import moveaxis, reshape

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
    return _read_only(ctx, lift(ctx, out))


register_function(np.lib.stride_tricks.sliding_window_view, sliding_window_view)
sliding_window_view.__jk_support__ = ("partly: static window_shape and axis; a read-only copy (writes raise as "
                                      "NumPy's), writeable=True refused")
