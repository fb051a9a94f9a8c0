"""Matrix-shaped functions: triu, tril, tri, diag, diagonal, trace, meshgrid, linspace and
logspace with traced end points, and ndim / shape / size.

They are built from existing primitives so they fuse: a triangle is an `iota` comparison fed to
`select` (no mask in memory), a diagonal is a square slice whose flattened form is read with
stride n + 1 (an index map), `diag` of a vector a comparison of two iotas.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.triu(a, 1) + np.trace(a))(np.ones((3, 3))).tolist()
[[3.0, 4.0, 4.0], [3.0, 3.0, 4.0], [3.0, 3.0, 3.0]]
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..ir import check_dtype
from ..trace.tracer import Tracer
from ..trace.operands import (broadcast_to_shape, context_of, lift, normalize_axis, result_type,
                    shape_of, unsupported_kwargs)
from ._shape import broadcast_arrays, moveaxis, reshape, expand_dims, swapaxes
from ._ufuncs import apply_ufunc, where, power
from ..trace.views import emit_diagonal, make_view
from ._dispatch import register_function
from ._linalg import matmul
from ._reductions import sum as _sum, any as _any

__all__ = ["triu", "tril", "tri", "diag", "diagflat", "diagonal", "trace", "meshgrid", "linspace",
           "logspace", "ndim", "shape", "size"]

_INT64 = np.dtype(np.int64)


def iota(ctx: Any, shape: tuple[int, ...], dimension: int, dtype: Any = _INT64) -> Tracer:
    """The index along `dimension` of every element of an array of `shape` (no memory)."""
    return ctx.bind1("iota", shape=tuple(shape), dimension=dimension, dtype=np.dtype(dtype))


def _diagonal_offsets(ctx: Any, n: int, m: int) -> Tracer:
    """(n, m) int64 array holding column - row: the diagonal each element lies on."""
    return apply_ufunc(np.subtract, iota(ctx, (n, m), 1), iota(ctx, (n, m), 0))


def _static_int(value: Any, what: str) -> Any:
    """An offset `k`: a Python int stays static, a traced integer scalar is used at run time."""
    if isinstance(value, Tracer):
        if value.ndim != 0 or value.dtype.kind not in "iub":
            raise TypeError(f"{what} must be an integer scalar")
        return value
    return operator.index(value)


def _triangle(m: Any, k: Any, lower: bool) -> Any:
    ctx = context_of(m)
    t = lift(ctx, m)
    if t.ndim == 0:
        raise TypeError("tri() missing 1 required positional argument: 'N'")  # NumPy's own error
    n, cols = (t.shape[-2], t.shape[-1]) if t.ndim >= 2 else (t.shape[-1], t.shape[-1])
    k = _static_int(k, "k")
    offsets = _diagonal_offsets(ctx, n, cols)
    # numpy.tril keeps column - row <= k, numpy.triu keeps column - row >= k.
    keep = apply_ufunc(np.less_equal if lower else np.greater_equal, offsets, k)
    zero = ctx.const(np.zeros((), t.dtype))
    out_shape = t.shape[:-2] + (n, cols)
    keep = broadcast_to_shape(ctx, keep, out_shape)
    return ctx.bind1("select", keep, broadcast_to_shape(ctx, t, out_shape), broadcast_to_shape(ctx, zero, out_shape))


def tril(m: Any, k: Any = 0) -> Any:
    """numpy.tril: elements above the k-th diagonal are zero (a 1-d input is a broadcast row)."""
    if context_of(m, k) is None:
        return np.tril(m, k)
    return _triangle(m, k, lower=True)


def triu(m: Any, k: Any = 0) -> Any:
    """numpy.triu: elements below the k-th diagonal are zero (a 1-d input is a broadcast row)."""
    if context_of(m, k) is None:
        return np.triu(m, k)
    return _triangle(m, k, lower=False)


def tri(N: Any, M: Any = None, k: Any = 0, dtype: Any = float, *, like: Any = None) -> Any:
    """numpy.tri: ones at and below the k-th diagonal (static N and M; k may be traced)."""
    ctx = context_of(k)
    if ctx is None or not isinstance(k, Tracer):
        return np.tri(N, M, k, dtype)
    M = N if M is None else M
    keep = apply_ufunc(np.less_equal, _diagonal_offsets(ctx, operator.index(N), operator.index(M)), k)
    return lift(ctx, keep, check_dtype(dtype, "the dtype= of tri"))


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """numpy.diagonal: the two axes are removed and the diagonal is the last axis."""
    ctx = context_of(a)
    if ctx is None:
        return np.diagonal(a, offset, axis1, axis2)
    t = lift(ctx, a)
    if t.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1 = normalize_axis(axis1, t.ndim)
    ax2 = normalize_axis(axis2, t.ndim)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator.index(offset)
    out = Tracer(ctx, emit_diagonal(ctx, t.ir_var, t.shape, offset, ax1, ax2))
    out.scalar = False
    # NumPy's diagonal is a read-only view: it shows later writes to `a`, and writes into it raise
    make_view(out, t, "diagonal", {"offset": offset, "axis1": ax1, "axis2": ax2})
    return out


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    """numpy.trace: sum of the diagonal, with sum's dtype rules (int8 -> int64)."""
    if context_of(a) is None:
        return np.trace(a, offset, axis1, axis2, dtype)
    unsupported_kwargs("trace", {"out": out}, out=None)
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v: Any, k: int = 0) -> Any:
    """numpy.diag: the k-th diagonal of a matrix, or a square matrix with a vector on it."""
    ctx = context_of(v)
    if ctx is None:
        return np.diag(v, k)
    t = lift(ctx, v)
    k = operator.index(k)
    if t.ndim == 2:
        return diagonal(t, k)
    if t.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = t.shape[0] + abs(k)
    if abs(k) and t.shape[0]:
        # Rows (k >= 0) or columns (k < 0) past the vector's end hold no diagonal element.
        t = ctx.bind1("concatenate", t, ctx.const(np.zeros(abs(k), t.dtype)), axis=0)
    elif abs(k):
        t = ctx.const(np.zeros(abs(k), t.dtype))
    on_diagonal = apply_ufunc(np.equal, _diagonal_offsets(ctx, n, n), k)
    values = broadcast_to_shape(ctx, reshape(t, (n, 1)), (n, n)) if k >= 0 else broadcast_to_shape(ctx, t, (n, n))
    zero = broadcast_to_shape(ctx, ctx.const(np.zeros((), t.dtype)), (n, n))
    return ctx.bind1("select", on_diagonal, values, zero)


def diagflat(v: Any, k: int = 0) -> Any:
    """numpy.diagflat: diag of the flattened input."""
    if context_of(v) is None:
        return np.diagflat(v, k)
    return diag(reshape(v, (-1,)), k)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    """numpy.meshgrid (NumPy's algorithm: reshape each vector onto its axis, then broadcast)."""
    if context_of(*xi) is None:
        return np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing)
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    ones = (1,) * ndim
    outputs = [reshape(x, ones[:i] + (-1,) + ones[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        outputs[0] = reshape(outputs[0], (1, -1) + ones[2:])
        outputs[1] = reshape(outputs[1], (-1, 1) + ones[2:])
    if not sparse:
        outputs = broadcast_arrays(*outputs)
    if copy:  # new arrays, not views of the inputs (a write into one must not reach them)
        outputs = [_new_array(o) for o in outputs]
    return tuple(outputs)


def _new_array(t: Tracer) -> Tracer:
    out = Tracer(t._ctx, t.ir_var)
    out.scalar = False
    return out


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """numpy.linspace; with traced start/stop NumPy's algorithm runs on the traced values
    (steps of zero handled per element as NumPy does per call)."""
    ctx = context_of(start, stop)
    if ctx is None or not (isinstance(start, Tracer) or isinstance(stop, Tracer)):
        return np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    dt = result_type(start, stop, 1.0)  # NumPy's inexact result type (weak scalars, NEP 50)
    out_dt = dt if dtype is None else check_dtype(dtype, "the dtype= of linspace")
    start_t, stop_t = lift(ctx, start, dt), lift(ctx, stop, dt)
    delta = apply_ufunc(np.subtract, stop_t, start_t)
    nd = len(np.broadcast_shapes(start_t.shape, stop_t.shape))
    y = reshape(lift(ctx, iota(ctx, (num,), 0), dt), (-1,) + (1,) * nd)
    if div > 0:
        step = apply_ufunc(np.divide, delta, np.asarray(div, dt))
        # NumPy multiplies by step unless some step is zero; then (y / div) * delta everywhere.
        any_zero = apply_ufunc(np.equal, step, np.asarray(0, dt))
        any_zero = _any(any_zero) if any_zero.ndim else any_zero
        scaled = apply_ufunc(np.multiply, apply_ufunc(np.divide, y, np.asarray(div, dt)), delta)
        y = where(any_zero, scaled, apply_ufunc(np.multiply, y, step))
    else:
        step = ctx.const(np.asarray(np.nan))  # NumPy's step is the Python float nan here
        y = apply_ufunc(np.multiply, y, delta)
    y = apply_ufunc(np.add, y, start_t)
    if endpoint and num > 1:
        last = broadcast_to_shape(ctx, reshape(stop_t, (1,) + stop_t.shape), (1,) + y.shape[1:])
        y = ctx.bind1("concatenate", y[:-1], lift(ctx, last, y.dtype), axis=0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if out_dt.kind in "iu":
        y = apply_ufunc(np.floor, y)
    y = lift(ctx, y, out_dt)
    return (y, step) if retstep else y


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """numpy.logspace: base ** linspace(start, stop) (traced end points and base allowed)."""
    ctx = context_of(start, stop, base)
    if ctx is None or not any(isinstance(x, Tracer) for x in (start, stop, base)):
        return np.logspace(start, stop, num, endpoint, base, dtype, axis)
    if not isinstance(base, (float, int)) and len(shape_of(base)):
        # NumPy makes all three arrays of one rank (strong dtypes) and puts base's axis at `axis`.
        nd = len(np.broadcast_shapes(shape_of(start), shape_of(stop), shape_of(base)))
        start, stop, base = (_ndmin(ctx, v, nd) for v in (start, stop, base))
        base = expand_dims(base, axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = power(base, y)  # a Python float base stays weak (NEP 50): float32 end points give float32
    return out if dtype is None else lift(ctx, out, check_dtype(dtype, "the dtype= of logspace"))


def _ndmin(ctx: Any, v: Any, nd: int) -> Tracer:
    t = lift(ctx, v)
    t = Tracer(ctx, t.ir_var) if t.weak is not None else t
    return reshape(t, (1,) * (nd - t.ndim) + t.shape) if t.ndim < nd else t


def ndim(a: Any) -> int:
    """numpy.ndim: a static Python int, also for traced arrays."""
    return len(shape_of(a)) if isinstance(a, Tracer) else np.ndim(a)


def shape(a: Any) -> tuple[int, ...]:
    """numpy.shape: a static tuple, also for traced arrays."""
    return tuple(a.shape) if isinstance(a, Tracer) else np.shape(a)


def size(a: Any, axis: Any = None) -> int:
    """numpy.size: a static Python int, also for traced arrays."""
    if not isinstance(a, Tracer):
        return np.size(a, axis)
    if axis is None:
        return a.size
    return a.shape[normalize_axis(axis, a.ndim)] if a.ndim else a.shape[axis]


# numpy.linalg's array-API spellings of the same functions (the last two axes).
def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """numpy.linalg.diagonal: diagonal over the last two axes."""
    return diagonal(x, offset, -2, -1)


def _linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """numpy.linalg.trace: trace over the last two axes."""
    return trace(x, offset, -2, -1, dtype)


def _register_linalg_spellings() -> None:
    register_function(np.linalg.diagonal, _linalg_diagonal)
    register_function(np.linalg.trace, _linalg_trace)


_register_linalg_spellings()


def _linalg_matrix_transpose(x: Any, /) -> Any:
    """numpy.linalg.matrix_transpose: swap the last two axes."""
    if len(shape_of(x)) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {len(shape_of(x))}")
    return swapaxes(x, -1, -2)


def _register_linalg_transpose() -> None:
    register_function(np.linalg.matrix_transpose, _linalg_matrix_transpose)
    register_function(np.linalg.matmul, matmul)


_register_linalg_transpose()
