"""Accumulations and counting inside a trace: cumsum, cumprod, ufunc.accumulate (library steps
running NumPy's sequential accumulation, so float results are bit for bit NumPy's), diff (slices
and a subtraction: it fuses), histogram, bincount (static minlength, checked when the call
runs) and digitize (library steps).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.cumsum(x) + np.diff(x, prepend=0))(np.arange(4.0))
array([0., 2., 4., 7.])
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import check_dtype
from ..ir.types import check_ufunc_dtype
from ..ir.primitives import PRIMITIVES
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, lift, normalize_axis, shape_of
from ._shape import concatenate, ravel
from ._ufuncs import COMPOSED_UFUNCS, apply_ufunc, where

__all__ = ["cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod", "diff", "histogram",
           "bincount", "digitize"]

def has_binary_methods(ufunc: np.ufunc) -> bool:
    """Whether `ufunc.reduce` / `accumulate` / `reduceat` trace, as library steps running NumPy's
    own method: a binary ufunc with one output that jitkernel computes (an elementwise
    primitive, or a ufunc composed of them, numpy/_ufuncs.py)."""
    name = ufunc.__name__
    return ufunc.nin == 2 and ufunc.nout == 1 and (name in COMPOSED_UFUNCS or (
        name in PRIMITIVES and PRIMITIVES[name].kind == "elementwise"))


@functools.lru_cache(maxsize=None)
def _accumulate_dtype(ufunc: str, dtype: np.dtype, requested: np.dtype | None, cumulative: bool) -> np.dtype:
    """NumPy's result dtype of cumsum/cumprod (cumulative=True) or ufunc.accumulate, asked of
    NumPy on a one-element sample (cumsum of int8 is int64, float16 stays float16, ...)."""
    sample = np.ones(1, dtype)
    if cumulative:
        fn = np.cumsum if ufunc == "add" else np.cumprod
        return fn(sample, dtype=requested).dtype
    return getattr(np, ufunc).accumulate(sample, dtype=requested).dtype


def accumulate(ufunc: str, a: Any, axis: Any, dtype: Any, cumulative: bool) -> Any:
    """`ufunc.accumulate(a, axis, dtype)` (or cumsum/cumprod when cumulative) as one library step."""
    ctx = context_of(a)
    t = lift(ctx, a)
    if cumulative and axis is None:
        t, ax = ravel(t), 0
    else:
        if t.ndim == 0 and not cumulative:
            raise TypeError("cannot accumulate on a scalar")  # NumPy's own error
        if t.ndim == 0:  # cumsum/cumprod ravel a 0-d array first (axis 1 is then AxisError)
            t = ravel(t)
        ax = normalize_axis(operator.index(axis), t.ndim)
    # cumsum/cumprod take a byte order in dtype= (and compute natively); ufunc.accumulate refuses it
    checked = check_dtype if cumulative else check_ufunc_dtype
    requested = None if dtype is None else checked(dtype, f"the dtype= of {ufunc}.accumulate")
    out_dt = _accumulate_dtype(ufunc, t.dtype, requested, cumulative)
    return ctx.bind1("accumulate", t, ufunc=ufunc, axis=ax, dtype=out_dt)


def ufunc_method(ufunc: np.ufunc, method: str, a: Any, kwargs: dict) -> Any:
    """`ufunc.accumulate(a, axis=0, dtype=None)` and `ufunc.reduce(a, axis=0, dtype=None,
    keepdims=False)` for binary ufuncs without a reduction primitive (bitwise_xor.reduce,
    subtract.reduce, ...): one library step running NumPy's own method."""
    name = ufunc.__name__
    if ufunc.nin != 2:
        raise ValueError(f"{method} only supported for binary functions")  # NumPy's own error
    if not has_binary_methods(ufunc):
        raise UnsupportedOperationError(f"numpy.{name}.{method} is not supported inside a jitted function")
    kwargs = dict(kwargs)
    axis, dtype = kwargs.pop("axis", 0), kwargs.pop("dtype", None)
    keepdims = kwargs.pop("keepdims", False) if method == "reduce" else False
    out = kwargs.pop("out", None)
    if out is not None and out != (None,):
        raise UnsupportedOperationError(f"numpy.{name}.{method}: out= is not supported inside jit")
    if kwargs:
        raise UnsupportedOperationError(f"numpy.{name}.{method}: argument {next(iter(kwargs))}= is not supported inside jit")
    if method == "accumulate":
        return accumulate(name, a, axis, dtype, cumulative=False)
    ctx = context_of(a)
    t = lift(ctx, a)
    axes = None if axis is None else tuple(sorted(normalize_axis(operator.index(ax), t.ndim)
                                                  for ax in (axis if isinstance(axis, tuple) else (axis,))))
    requested = None if dtype is None else check_ufunc_dtype(dtype, f"the dtype= of {name}.reduce")
    # NumPy's result dtype and its errors (no identity for an empty axis, ...) on a sample of
    # the same dtype and dimensions.
    sample = np.ones((1,) * t.ndim, t.dtype)
    out_dt = ufunc.reduce(sample, axis=axes, dtype=requested).dtype
    return ctx.bind1("ufunc_reduce", t, ufunc=name, axes=axes, dtype=out_dt, keepdims=bool(keepdims))


def ufunc_reduceat(ufunc: np.ufunc, a: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """`ufunc.reduceat(a, indices, axis=0, dtype=None)`: out[i] reduces a[indices[i]:indices[i+1]]
    along the axis (the last slice runs to the end; a[indices[i]] alone where indices[i] >=
    indices[i+1]), one library step running NumPy's own method. Constant indices are checked
    now (NumPy's IndexError); traced ones when the step runs.

    >>> import numpy as np, jitkernel as jk
    >>> jk.jit(lambda x: np.add.reduceat(x, [0, 3, 1]))(np.arange(6.0))
    array([ 3.,  3., 15.])
    """
    name = ufunc.__name__
    if ufunc.nin != 2:
        raise ValueError("reduceat only supported for binary functions")  # NumPy's own error
    if not has_binary_methods(ufunc):
        raise UnsupportedOperationError(f"numpy.{name}.reduceat is not supported inside a jitted function")
    if out is not None and out != (None,):
        raise UnsupportedOperationError(f"numpy.{name}.reduceat: out= is not supported inside jit")
    ctx = context_of(a, indices)
    t = lift(ctx, a)
    if t.ndim == 0:
        raise TypeError("cannot reduceat on a scalar")  # NumPy's own error
    ax = normalize_axis(operator.index(axis), t.ndim)
    requested = None if dtype is None else check_ufunc_dtype(dtype, f"the dtype= of {name}.reduceat")
    # NumPy's result dtype (add and multiply widen small integers) and, for constant indices,
    # its errors, on a sample with the real length along the axis.
    sample = np.ones(tuple(n if d == ax else 1 for d, n in enumerate(t.shape)), t.dtype)
    if isinstance(indices, Tracer):
        if indices.ndim != 1:
            raise ValueError("index must be 1-dimensional")
        if indices.dtype.kind not in "iu":
            raise TypeError(f"numpy.{name}.reduceat: indices must be integers, got {indices.dtype}")
        idx = indices if indices.dtype == np.int64 else ctx.bind1("convert", indices, dtype=np.dtype(np.int64))
        out_dt = ufunc.reduceat(sample, [0] if t.shape[ax] else [], axis=ax, dtype=requested).dtype
    else:
        concrete = np.asarray(indices)
        out_dt = ufunc.reduceat(sample, concrete, axis=ax, dtype=requested).dtype  # IndexError, ...
        idx = ctx.const(np.asarray(concrete, dtype=np.int64).reshape(-1))
    return ctx.bind1("ufunc_reduceat", t, idx, ufunc=name, axis=ax, dtype=out_dt)


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """numpy.cumsum: sequential sums (NumPy's order), small ints accumulate in int64."""
    if context_of(a) is None:
        return np.cumsum(a, axis=axis, dtype=dtype, out=out)
    _no_out("cumsum", out)
    return accumulate("add", a, axis, dtype, cumulative=True)


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """numpy.cumprod: sequential products (NumPy's order)."""
    if context_of(a) is None:
        return np.cumprod(a, axis=axis, dtype=dtype, out=out)
    _no_out("cumprod", out)
    return accumulate("multiply", a, axis, dtype, cumulative=True)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """numpy.nancumsum: cumsum with NaN counted as zero."""
    if context_of(a) is None:
        return np.nancumsum(a, axis=axis, dtype=dtype, out=out)
    return cumsum(_nan_to(a, 0), axis, dtype, out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """numpy.nancumprod: cumprod with NaN counted as one."""
    if context_of(a) is None:
        return np.nancumprod(a, axis=axis, dtype=dtype, out=out)
    return cumprod(_nan_to(a, 1), axis, dtype, out)


def _nan_to(a: Any, value: int) -> Any:
    t = lift(context_of(a), a)
    if t.dtype.kind not in "fc":
        return t  # NumPy replaces NaN only in inexact arrays
    return where(apply_ufunc(np.isnan, t), np.asarray(value, t.dtype), t)


def _cumulative(ufunc: str, x: Any, axis: Any, dtype: Any, out: Any, include_initial: bool) -> Any:
    """numpy.cumulative_sum / cumulative_prod (the array API's cumsum): axis required above 1-d,
    include_initial prepends the identity."""
    fname = "cumulative_sum" if ufunc == "add" else "cumulative_prod"
    ctx = context_of(x)
    _no_out(fname, out)
    t = lift(ctx, x)
    if t.ndim == 0:
        t = t.reshape((1,))
    if axis is None:
        if t.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    ax = normalize_axis(operator.index(axis), t.ndim)
    requested = None if dtype is None else check_ufunc_dtype(dtype, f"the dtype= of {fname}")
    out_dt = np.dtype(getattr(np, fname)(np.ones(1, t.dtype), dtype=requested).dtype)
    acc = ctx.bind1("accumulate", t, ufunc=ufunc, axis=ax, dtype=out_dt)
    if not include_initial:
        return acc
    shape = list(t.shape)
    shape[ax] = 1
    first = broadcast_to_shape(ctx, lift(ctx, np.asarray(0 if ufunc == "add" else 1, out_dt)), tuple(shape))
    return concatenate([first, acc], axis=ax)


def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None, include_initial: bool = False) -> Any:
    """numpy.cumulative_sum."""
    if context_of(x) is None:
        return np.cumulative_sum(x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)
    return _cumulative("add", x, axis, dtype, out, include_initial)


def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None, include_initial: bool = False) -> Any:
    """numpy.cumulative_prod."""
    if context_of(x) is None:
        return np.cumulative_prod(x, axis=axis, dtype=dtype, out=out, include_initial=include_initial)
    return _cumulative("multiply", x, axis, dtype, out, include_initial)


def _no_out(fname: str, out: Any) -> None:
    if out is not None:
        raise UnsupportedOperationError(f"numpy.{fname}: out= is not supported inside jit")


def _take_slice(t: Tracer, axis: int, start: int | None, stop: int | None) -> Tracer:
    index = [slice(None)] * t.ndim
    index[axis] = slice(start, stop)
    return t[tuple(index)]


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Any:
    """numpy.diff: a[1:] - a[:-1] n times (not_equal for bool), with prepend/append broadcast
    along the other axes, as NumPy does."""
    if context_of(a, prepend, append) is None:
        return np.diff(a, n=n, axis=axis, prepend=prepend, append=append)
    ctx = context_of(a, prepend, append)
    n = operator.index(n)
    if n == 0:
        return lift(ctx, a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    t = lift(ctx, a)
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, t.ndim)
    parts = []
    for extra, first in ((prepend, True), (append, False)):
        if extra is np._NoValue:
            continue
        e = lift(ctx, extra)
        if e.ndim == 0:
            shape = list(t.shape)
            shape[ax] = 1
            e = broadcast_to_shape(ctx, e, tuple(shape))
        parts.append((first, e))
    if parts:
        pieces = [e for first, e in parts if first] + [t] + [e for first, e in parts if not first]
        t = concatenate(pieces, axis=ax)
    op = np.not_equal if t.dtype == np.bool_ else np.subtract
    for _ in range(n):
        if t.shape[ax] == 0:
            break
        t = apply_ufunc(op, _take_slice(t, ax, 1, None), _take_slice(t, ax, None, -1))
    return t


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """numpy.histogram: bins an int or an array of edges (static count), range, density,
    weights. String bin rules ('auto', ...) choose the count from the data: not supported."""
    ctx = context_of(a, bins, weights, range)
    if ctx is None:
        return np.histogram(a, bins=bins, range=range, density=density, weights=weights)
    if isinstance(bins, str):
        raise UnsupportedOperationError(
            f"numpy.histogram: bins={bins!r} chooses the number of bins from the data, so the result "
            "shape would depend on it; pass an int or an array of edges inside jit")
    if range is not None:
        if any(isinstance(r, Tracer) for r in range):
            raise UnsupportedOperationError("numpy.histogram: range must be static (Python numbers) inside jit")
        range = tuple(range)  # noqa: A001 - the numbers as given: their types decide the edges' dtype
    ins = [ravel(lift(ctx, a))]
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        nbins = operator.index(bins)
        if nbins < 1:
            raise ValueError("`bins` must be positive, when an integer")
    else:
        nbins = None
        ins.append(lift(ctx, bins))
    if weights is not None:
        w = lift(ctx, weights)
        if w.shape != shape_of(a):
            raise ValueError("weights should have the same shape as a.")
        ins.append(ravel(w))
    hist, edges = ctx.bind("histogram", ins, bins=nbins, range=range, density=bool(density),
                           weighted=weights is not None)
    return hist, edges


# numpy.bincount without minlength: a data-dependent length, bounded by a narrow dtype. _datadep_sets
# computes it and sets this when it is imported (it sits above this module: it imports _datadep,
# which imports _dispatch, which imports this); (x, weights) -> the counts, or None when unbounded.
bincount_without_minlength: Callable[[Any, Any], Any] | None = None


def bincount(x: Any, /, weights: Any = None, minlength: Any = 0) -> Any:
    """numpy.bincount with a static minlength: the result has length minlength, and a call whose
    largest value is >= minlength raises ValueError (NumPy would return a longer array, a length
    that depends on the data)."""
    ctx = context_of(x, weights)
    if ctx is None:
        return np.bincount(x, weights, minlength=minlength)
    if isinstance(minlength, Tracer):
        raise UnsupportedOperationError("numpy.bincount: minlength must be static inside jit")
    x_dtype = lift(ctx, x).dtype
    if not np.can_cast(x_dtype, np.intp, "safe"):
        np.bincount(np.zeros(0, x_dtype))  # NumPy's own TypeError for values it cannot cast to intp
    minlength = 0 if minlength is None else operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if minlength == 0:
        counted = None
        if bincount_without_minlength is not None and np.ndim(x) == 1:
            counted = bincount_without_minlength(lift(ctx, x), weights)
        if counted is not None:
            return counted
        raise UnsupportedOperationError(
            "numpy.bincount: the result length is max(x) + 1, which depends on the data and has no bound for "
            f"{lift(ctx, x).dtype} input; inside jit pass minlength= larger than every value of x (the call raises "
            "ValueError if a value is not), or give x a bool, 8- or 16-bit integer dtype (a data-dependent length "
            "of at most 2, 256 or 65536)")
    ins = [lift(ctx, x)] + ([] if weights is None else [lift(ctx, weights)])
    return ctx.bind1("bincount", *ins, minlength=minlength)


def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    """numpy.digitize: the index of the bin of each x (bins increasing or decreasing)."""
    ctx = context_of(x, bins)
    if ctx is None:
        return np.digitize(x, bins, right=right)
    return ctx.bind1("digitize", lift(ctx, x), lift(ctx, bins), right=bool(right))


Tracer.cumsum = lambda self, axis=None, dtype=None, out=None: cumsum(self, axis, dtype, out)
Tracer.cumprod = lambda self, axis=None, dtype=None, out=None: cumprod(self, axis, dtype, out)

# Notes for the generated support table (jitkernel/numpy/support_table.py, branch arrayfns).
histogram.__jk_support__ = "partly: bins an int or an array (string rules pick the count from the data); static range"
bincount.__jk_support__ = ("partly: a static minlength (a value >= minlength raises ValueError); without one, bool, 8- "
                            "and 16-bit integer input only (a data-dependent length)")
cumsum.__jk_support__ = "partly: out= unsupported"
cumprod.__jk_support__ = "partly: out= unsupported"
