"""ediff1d, gradient and unwrap: NumPy's finite-difference functions, traced step by step.

Each follows NumPy 2.4's own code (numpy/lib/_arraysetops_impl.py, _function_base_impl.py)
with the traced ufuncs, slicing and in-place stores into a fresh traced array (NumPy's
`out = np.empty_like(...); out[...] = ...`), so dtypes, casts and rounding steps are NumPy's,
and derivatives and batching come from the primitives they are made of:

- ediff1d(ary, to_end, to_begin): ary raveled, `ary[1:] - ary[:-1]` between the (raveled)
  to_begin and to_end, in ary's dtype (NumPy's same_kind TypeError for to_begin/to_end).
- gradient(f, *varargs, axis, edge_order): central differences inside, one-sided ones (first
  or second order) at the edges; spacing as one scalar, a scalar per axis or coordinate
  arrays. NumPy checks whether concrete coordinates are evenly spaced and then uses the
  scalar formula: done here too, at trace time. Traced coordinates are not known while
  tracing, so they always take the uneven-spacing formula (the same values up to rounding).
- unwrap(p, discont, axis, period): jumps larger than `discont` corrected by multiples of
  `period` (integer periods keep integer arithmetic, as NumPy).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(np.gradient)(np.array([1.0, 2.0, 4.0, 7.0]))
array([1. , 1.5, 2.5, 3. ])
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..trace.operands import broadcast_to_shape, context_of, lift, shape_of, result_type
from ..trace.tracer import Tracer
from ..trace.views import fresh
from ._ufuncs import apply_ufunc, where
from ..errors import UnsupportedOperationError
from ._cumulative import cumsum, diff
from ._shape import reshape, ravel

__all__ = ["ediff1d", "gradient", "unwrap"]


def _array(ctx: Any, x: Any) -> Tracer:
    """np.asanyarray(x) in the trace: a strong array (a Python scalar gets its default dtype)."""
    t = lift(ctx, x)
    return lift(ctx, t, t.dtype) if t.weak is not None else t


def _empty(ctx: Any, shape: tuple, dtype: np.dtype) -> Tracer:
    """A fresh traced array to store into (np.empty's role; it holds zeros)."""
    return fresh(broadcast_to_shape(ctx, ctx.const(np.zeros((), dtype)), tuple(shape)))


# ----------------------------------------------------------------------------- ediff1d

def _edge_values(ctx: Any, values: Any, dtype: np.dtype, name: str) -> Tracer | None:
    if values is None:
        return None
    t = _array(ctx, values)
    if not np.can_cast(t.dtype, dtype, casting="same_kind"):
        raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
    return ravel(t)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """numpy.ediff1d: differences of the raveled array, with values before and after."""
    ctx = context_of(ary, to_end, to_begin)
    if ctx is None:
        return np.ediff1d(ary, to_end, to_begin)
    a = ravel(_array(ctx, ary))
    dtype = a.dtype
    if to_begin is None and to_end is None:
        return apply_ufunc(np.subtract, a[1:], a[:-1])
    begin = _edge_values(ctx, to_begin, dtype, "to_begin")
    end = _edge_values(ctx, to_end, dtype, "to_end")
    l_begin = 0 if begin is None else begin.shape[0]
    l_end = 0 if end is None else end.shape[0]
    l_diff = max(a.shape[0] - 1, 0)
    result = _empty(ctx, (l_diff + l_begin + l_end,), dtype)
    if l_begin > 0:
        result[:l_begin] = begin
    if l_end > 0:
        result[l_begin + l_diff:] = end
    result[l_begin:l_begin + l_diff] = apply_ufunc(np.subtract, a[1:], a[:-1])
    return result


# ----------------------------------------------------------------------------- gradient

def _spacings(ctx: Any, varargs: tuple, f: Tracer, axes: tuple) -> list:
    """NumPy's dx: one entry per axis, a scalar or the differences of its coordinates."""
    n, len_axes = len(varargs), len(axes)
    if n == 0:
        return [1.0] * len_axes
    if n == 1 and len(shape_of(varargs[0])) == 0:
        return list(varargs) * len_axes
    if n != len_axes:
        raise TypeError("invalid number of arguments")
    dx = list(varargs)
    for i, distances in enumerate(dx):
        if len(shape_of(distances)) == 0:
            continue
        if len(shape_of(distances)) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if shape_of(distances)[0] != f.shape[axes[i]]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        dx[i] = _coordinate_differences(ctx, distances)
    return dx


def _coordinate_differences(ctx: Any, distances: Any) -> Any:
    """np.diff of the coordinates (integers as float64); evenly spaced concrete ones reduce to
    one scalar, as NumPy's `(diffx == diffx[0]).all()` does."""
    if not isinstance(distances, Tracer):
        d = np.asanyarray(distances)
        d = d.astype(np.float64) if np.issubdtype(d.dtype, np.integer) else d
        diffx = np.diff(d)
        return diffx[0] if (diffx == diffx[0]).all() else diffx
    d = _array(ctx, distances)
    if np.issubdtype(d.dtype, np.integer):
        d = lift(ctx, d, np.dtype(np.float64))
    return diff(d)


def _binary(ufunc: np.ufunc, python_op: Any) -> Any:
    """NumPy's operator in its formulas: traced when an operand is traced, otherwise the
    operator itself (Python floats stay Python floats, weak against float32 data)."""
    def op(p: Any, q: Any) -> Any:
        if isinstance(p, Tracer) or isinstance(q, Tracer):
            return apply_ufunc(ufunc, p, q)
        return python_op(p, q)
    return op


_ADD, _SUB, _MUL, _DIV = (_binary(u, o) for u, o in ((np.add, operator.add), (np.subtract, operator.sub),
                                                      (np.multiply, operator.mul), (np.divide, operator.truediv)))


def _NEG(p: Any) -> Any:
    return apply_ufunc(np.negative, p) if isinstance(p, Tracer) else -p


def _index(n: int, axis: int, at: Any) -> tuple:
    sl = [slice(None)] * n
    sl[axis] = at
    return tuple(sl)


def _interior(f: Tracer, axis: int, ax_dx: Any) -> Any:
    """Second-order central differences at the interior points."""
    nd = f.ndim
    lo, mid, hi = (f[_index(nd, axis, s)] for s in (slice(None, -2), slice(1, -1), slice(2, None)))
    if len(shape_of(ax_dx)) == 0:
        return _DIV(_SUB(hi, lo), _MUL(2., ax_dx))
    dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
    mul, add, sub, div = _MUL, _ADD, _SUB, _DIV
    a = div(apply_ufunc(np.negative, dx2), mul(dx1, add(dx1, dx2)))
    b = div(sub(dx2, dx1), mul(dx1, dx2))
    c = div(dx1, mul(dx2, add(dx1, dx2)))
    shape = [1] * nd
    shape[axis] = -1
    a, b, c = (reshape(_array(f._ctx, v), tuple(shape)) for v in (a, b, c))
    return add(add(mul(a, lo), mul(b, mid)), mul(c, hi))


def _edges_first_order(f: Tracer, axis: int, ax_dx: Any, uniform: bool) -> tuple:
    nd = f.ndim
    dx_0 = ax_dx if uniform else ax_dx[0]
    dx_n = ax_dx if uniform else ax_dx[-1]
    first = _DIV(_SUB(f[_index(nd, axis, 1)], f[_index(nd, axis, 0)]), dx_0)
    last = _DIV(_SUB(f[_index(nd, axis, -1)], f[_index(nd, axis, -2)]), dx_n)
    return first, last


def _combination(f: Tracer, axis: int, coefficients: tuple, at: tuple) -> Any:
    """a * f[at0] + b * f[at1] + c * f[at2] along `axis`."""
    nd = f.ndim
    terms = [_MUL(k, f[_index(nd, axis, i)]) for k, i in zip(coefficients, at)]
    return _ADD(_ADD(terms[0], terms[1]), terms[2])


def _edges_second_order(f: Tracer, axis: int, ax_dx: Any, uniform: bool) -> tuple:
    div, mul, add, neg = _DIV, _MUL, _ADD, _NEG
    if uniform:
        start = (div(-1.5, ax_dx), div(2., ax_dx), div(-0.5, ax_dx))
        end = (div(0.5, ax_dx), div(-2., ax_dx), div(1.5, ax_dx))
    else:
        dx1, dx2 = ax_dx[0], ax_dx[1]
        start = (div(neg(add(mul(2., dx1), dx2)), mul(dx1, add(dx1, dx2))),
                 div(add(dx1, dx2), mul(dx1, dx2)),
                 div(neg(dx1), mul(dx2, add(dx1, dx2))))
        dx1, dx2 = ax_dx[-2], ax_dx[-1]
        end = (div(dx2, mul(dx1, add(dx1, dx2))),
               div(neg(add(dx2, dx1)), mul(dx1, dx2)),
               div(add(mul(2., dx2), dx1), mul(dx2, add(dx1, dx2))))
    return _combination(f, axis, start, (0, 1, 2)), _combination(f, axis, end, (-3, -2, -1))


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """numpy.gradient: a tuple of one array per axis (one array for one axis)."""
    ctx = context_of(f, *varargs)
    if ctx is None:
        return np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    from numpy.lib.array_utils import normalize_axis_tuple
    t = _array(ctx, f)
    nd = t.ndim
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    dx = _spacings(ctx, varargs, t, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = t.dtype
    if not np.issubdtype(otype, np.inexact):
        if np.issubdtype(otype, np.integer):
            t = lift(ctx, t, np.dtype(np.float64))
        otype = np.dtype(np.float64)
    outvals = []
    for ax, ax_dx in zip(axes, dx):
        if t.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        out = _empty(ctx, t.shape, otype)
        uniform = len(shape_of(ax_dx)) == 0
        out[_index(nd, ax, slice(1, -1))] = _interior(t, ax, ax_dx)
        edges = _edges_first_order if edge_order == 1 else _edges_second_order
        first, last = edges(t, ax, ax_dx, uniform)
        out[_index(nd, ax, 0)] = first
        out[_index(nd, ax, -1)] = last
        outvals.append(out)
    return outvals[0] if len(axes) == 1 else tuple(outvals)


# ----------------------------------------------------------------------------- unwrap

def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: Any = 2 * np.pi) -> Any:
    """numpy.unwrap: p with each jump above max(discont, period/2) corrected by a multiple of period."""
    ctx = context_of(p, discont, period)
    if ctx is None:
        return np.unwrap(p, discont, axis, period=period)
    t = _array(ctx, p)
    axis = operator.index(axis)
    nd = t.ndim
    dd = diff(t, axis=axis)
    if discont is None:
        discont = period / 2
    slice1 = _index(nd, axis, slice(1, None))
    dtype = result_type(dd, period)
    if np.issubdtype(dtype, np.integer):
        if isinstance(period, Tracer):
            raise UnsupportedOperationError("numpy.unwrap: an integer period must be static inside jit")
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = apply_ufunc(np.add, apply_ufunc(np.remainder, apply_ufunc(np.subtract, dd, interval_low), period),
                        interval_low)
    if boundary_ambiguous:
        at_low = apply_ufunc(np.bitwise_and, apply_ufunc(np.equal, ddmod, interval_low), apply_ufunc(np.greater, dd, 0))
        ddmod = where(at_low, lift(ctx, interval_high, ddmod.dtype), ddmod)  # copyto(ddmod, high, where=...)
    ph_correct = apply_ufunc(np.subtract, ddmod, dd)
    small = apply_ufunc(np.less, apply_ufunc(np.absolute, dd), discont)
    ph_correct = where(small, lift(ctx, 0, ph_correct.dtype), ph_correct)  # copyto(ph_correct, 0, where=...)
    up = fresh(lift(ctx, t, dtype)) if dtype != t.dtype else fresh(t)
    up[slice1] = apply_ufunc(np.add, t[slice1], cumsum(ph_correct, axis))
    return up
