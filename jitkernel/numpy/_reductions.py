"""Reductions with NumPy's axis, keepdims and dtype rules: sum prod max min any all argmax
argmin mean var std."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..ir.types import check_ufunc_dtype
from ..trace.operands import context_of, lift, normalize_axes, normalize_axes_legacy_0d, normalize_axis, unsupported_kwargs
from ._shape import reshape
from ._ufuncs import _fresh, apply_ufunc
from ._complex import imag, real


@functools.lru_cache(maxsize=None)
def _default_accumulator(ufunc_name: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype of ufunc.reduce on `dtype` without dtype= (int8 sum -> int64, ...)."""
    return getattr(np, ufunc_name).reduce(np.zeros(1, dtype)).dtype


def _keep(t: Any, in_shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims or not in_shape:
        return t  # a 0-d reduction result stays what the reduction made (a NumPy scalar)
    return reshape(t, tuple(1 if d in axes else n for d, n in enumerate(in_shape)))


def _reduce(prim: str, ufunc_name: str | None, a: Any, axis: Any, dtype: Any, keepdims: bool) -> Any:
    ctx = context_of(a)
    t = lift(ctx, a)
    axes = normalize_axes_legacy_0d(axis, t.ndim)  # ufunc.reduce's rule
    if dtype is not None:
        acc = check_ufunc_dtype(dtype, f"the dtype= of {prim}")
    elif ufunc_name is not None:
        acc = _default_accumulator(ufunc_name, t.dtype)
    else:
        acc = t.dtype
    t = lift(ctx, t, acc)
    if axes:
        out = ctx.bind1(prim, t, axes=axes)
    elif prim == "reduce_sum" and t.dtype.kind in "fc":
        # Over no axes (a 0-d input, axis=()) NumPy still adds each element to the identity
        # +0.0, so -0.0 sums to +0.0; products (1 * x), max and min return x itself.
        out = apply_ufunc(np.add, t, t.dtype.type(0))
    else:
        out = _fresh(t)  # a new array, as NumPy's reduction returns (never a view of `a`)
    return _keep(out, t.shape, axes, keepdims)


def _fallback(name: str, a: Any, kw: dict) -> Any:
    return getattr(np, name)(a, **kw)


def sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: A001
    """numpy.sum: small ints and bool accumulate in int64/uint64, as in NumPy."""
    if context_of(a) is None:
        return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("sum", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _reduce("reduce_sum", "add", a, axis, dtype, keepdims)


def prod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.prod (int wraparound as NumPy)."""
    if context_of(a) is None:
        return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("prod", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _reduce("reduce_prod", "multiply", a, axis, dtype, keepdims)


def max(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: A001
    """numpy.max: NaN propagates; an empty reduction raises ValueError as NumPy does."""
    if context_of(a) is None:
        return np.max(a, axis=axis, keepdims=keepdims, **kw)
    unsupported_kwargs("max", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _reduce("reduce_max", None, a, axis, None, keepdims)


def min(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: A001
    """numpy.min: NaN propagates; an empty reduction raises ValueError as NumPy does."""
    if context_of(a) is None:
        return np.min(a, axis=axis, keepdims=keepdims, **kw)
    unsupported_kwargs("min", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _reduce("reduce_min", None, a, axis, None, keepdims)


amax, amin = max, min


def _truth(ctx: Any, a: Any) -> Any:
    t = lift(ctx, a)
    return t if t.dtype == np.bool_ else lift(ctx, t, np.dtype(np.bool_))


def any(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: A001
    """numpy.any (NaN counts as true)."""
    ctx = context_of(a)
    if ctx is None:
        return np.any(a, axis=axis, keepdims=keepdims, **kw)
    unsupported_kwargs("any", dict(kw, out=out), out=None, where=True)
    return _reduce("reduce_or", None, _truth(ctx, a), axis, None, keepdims)


def all(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: A001
    """numpy.all (NaN counts as true)."""
    ctx = context_of(a)
    if ctx is None:
        return np.all(a, axis=axis, keepdims=keepdims, **kw)
    unsupported_kwargs("all", dict(kw, out=out), out=None, where=True)
    return _reduce("reduce_and", None, _truth(ctx, a), axis, None, keepdims)


def _arg(prim: str, a: Any, axis: Any, keepdims: bool) -> Any:
    ctx = context_of(a)
    t = lift(ctx, a)
    if axis is None:
        flat = reshape(t, (t.size,))
        out = ctx.bind1(prim, flat, axis=0)
        return reshape(out, (1,) * t.ndim) if keepdims else out
    if t.ndim == 0:  # NumPy ravels a 0-d array first: axis 0 or -1 of its one element
        normalize_axis(axis, 1)
        return ctx.bind1(prim, reshape(t, (1,)), axis=0)
    ax = normalize_axis(axis, t.ndim)
    out = ctx.bind1(prim, t, axis=ax)
    return _keep(out, t.shape, (ax,), keepdims)


def argmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.argmax: first occurrence; the first NaN wins, as in NumPy."""
    if context_of(a) is None:
        return np.argmax(a, axis=axis, keepdims=keepdims)
    return _arg("argmax", a, axis, keepdims)


def argmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.argmin: first occurrence; the first NaN wins, as in NumPy."""
    if context_of(a) is None:
        return np.argmin(a, axis=axis, keepdims=keepdims)
    return _arg("argmin", a, axis, keepdims)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for d in axes:
        n *= shape[d]
    return n


def _divide_by_count(ctx: Any, s: Any, n: int) -> Any:
    """s / n as numpy.mean and numpy.var compute it: NumPy divides by an intp count, a strong
    integer, so float16/float32 sums are divided in float64 and cast back to the sum's dtype
    (`true_divide(ret, rcount, out=ret, casting="unsafe")`). Dividing by a weak Python int would
    stay in float16 and turn a count above 65504 into inf (var of 300,000 float16 values: nan
    instead of NumPy's inf), and round float32 quotients differently."""
    count = np.intp(n) if isinstance(n, (int, np.integer)) else np.float64(n)  # ddof may be a float
    return lift(ctx, apply_ufunc(np.divide, s, count), s.dtype)


def _mean_dtype(t: Any, dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(accumulator dtype, result dtype) of numpy.mean."""
    if dtype is not None:
        dt = check_ufunc_dtype(dtype, "the dtype= of mean")
        return dt, dt
    if t.dtype.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if t.dtype == np.float16:
        return np.dtype(np.float32), np.dtype(np.float16)
    return t.dtype, t.dtype


def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.mean: integers average in float64, float16 in float32 (result float16)."""
    ctx = context_of(a)
    if ctx is None:
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("mean", dict(kw, out=out), out=None, where=True)
    t = lift(ctx, a)
    acc, res = _mean_dtype(t, dtype)
    axes = normalize_axes(axis, t.ndim)
    s = sum(t, axis=axes, dtype=acc, keepdims=keepdims)
    m = _divide_by_count(ctx, s, _count(t.shape, axes))
    return lift(ctx, m, res) if m.dtype != res else m


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.var: two passes (mean, then mean of squared deviations), NumPy's dtype rules."""
    ctx = context_of(a)
    if ctx is None:
        return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)
    correction = kw.pop("correction", np._NoValue)
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    unsupported_kwargs("var", dict(kw, out=out), out=None, where=True, mean=np._NoValue)
    t = lift(ctx, a)
    axes = normalize_axes(axis, t.ndim)
    acc = check_ufunc_dtype(dtype, "the dtype= of var") if dtype is not None else (
        np.dtype(np.float64) if t.dtype.kind in "biu" else None)
    n = _count(t.shape, axes)
    arrmean = sum(t, axis=axes, dtype=acc, keepdims=True)
    arrmean = _divide_by_count(ctx, arrmean, n)
    x = apply_ufunc(np.subtract, t, arrmean)
    if x.dtype.kind == "c":
        # NumPy's complex fast path: re**2 + im**2 in the parts' float dtype (a real variance)
        x = apply_ufunc(np.add, apply_ufunc(np.square, real(x)), apply_ufunc(np.square, imag(x)))
    else:
        x = apply_ufunc(np.multiply, x, x)
    s = sum(x, axis=axes, dtype=acc, keepdims=keepdims)
    return _divide_by_count(ctx, s, builtins_max(n - ddof, 0))


def builtins_max(a: Any, b: Any) -> Any:
    return a if a >= b else b


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.std: sqrt of var."""
    if context_of(a) is None:
        return np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)
    return apply_ufunc(np.sqrt, var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw))
