"""Statistics and friends: average, cov, corrcoef, ptp, divmod and the NaN-ignoring reductions
(nansum, nanprod, nanmax, nanmin, nanmean, nanvar, nanstd, nanargmax, nanargmin).

Each follows NumPy's own code path (jitkernel/numpy mirrors numpy/lib/_function_base_impl.py
and _nanfunctions_impl.py), so dtypes, rounding steps and errors are NumPy's. Errors NumPy
raises on data ("Weights sum to zero", "All-NaN slice encountered", negative fweights) are
run-time checks (`raise_if`, a library step) that raise NumPy's exception from the call.

>>> import numpy as np, jitkernel as jk
>>> float(jk.jit(lambda a, w: np.average(a, weights=w))(np.arange(3.0), np.array([1.0, 0.0, 1.0])))
1.0
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import check_dtype
from ..trace.tracer import Tracer
from ..trace.operands import context_of, lift, normalize_axes, unsupported_kwargs, dtype_key, WEAK_DEFAULT
from ._reductions import mean, var
from ._reductions import any as _any, all as _all, max as _max, min as _min, sum as _sum, prod as _prod
from ._reductions import argmax as _argmax, argmin as _argmin
from ._shape import broadcast_to, reshape, squeeze, transpose, concatenate, stack
from ._ufuncs import apply_ufunc, where, clip
from ..ir.primitives import ufunc_loop
from ._cumulative import cumsum
from ._dispatch import _table
from ._linalg import dot
from ._manipulation import _gather
from ._matrix import diag

__all__ = ["average", "cov", "corrcoef", "ptp", "divmod", "nansum", "nanprod", "nanmax", "nanmin",
           "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin", "median", "percentile",
           "quantile"]


def raise_if(value: Tracer, bad: Tracer, exception: str, message: str) -> Tracer:
    """`value`, after raising `exception(message)` at run time if the traced bool `bad` is true."""
    ctx = value._ctx
    bad = lift(ctx, bad, np.dtype(np.bool_))
    if bad.ndim:
        bad = _any(bad)
    out = ctx.bind1("raise_if", value, bad, exception=exception, message=message)
    out.scalar = value.scalar
    return out


# ----------------------------------------------------------------------------- average

def _weights_are_valid(ctx: Any, weights: Any, a: Tracer, axis: tuple | None) -> Tracer:
    wgt = lift(ctx, weights)
    if a.shape != wgt.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if wgt.shape != tuple(a.shape[ax] for ax in axis):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        wgt = transpose(wgt, tuple(int(i) for i in np.argsort(axis)))
        wgt = reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(a.shape)))
    return wgt


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: Any = np._NoValue) -> Any:
    """numpy.average; weights summing to zero raise ZeroDivisionError at run time."""
    ctx = context_of(a, weights)
    if ctx is None:
        return np.average(a, axis, weights, returned, keepdims=keepdims)
    t = lift(ctx, a)
    if t.weak is not None:
        t = Tracer(ctx, t.ir_var)
    if axis is not None:
        from numpy.lib.array_utils import normalize_axis_tuple
        axis = normalize_axis_tuple(axis, t.ndim, argname="axis")
    kw = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is None:
        avg = mean(t, axis, **kw)
        scl = ctx.const(np.asarray(avg.dtype.type(t.size / avg.size)))
    else:
        wgt = _weights_are_valid(ctx, weights, t, axis)
        rd = np.result_type(t.dtype, wgt.dtype, "f8") if t.dtype.kind in "biu" else np.result_type(t.dtype, wgt.dtype)
        scl = _sum(wgt, axis=axis, dtype=rd, **kw)
        scl = raise_if(scl, apply_ufunc(np.equal, scl, 0.0), "ZeroDivisionError",
                       "Weights sum to zero, can't be normalized")
        prod = apply_ufunc(np.multiply, lift(ctx, t, rd), lift(ctx, wgt, rd))
        avg = apply_ufunc(np.divide, _sum(prod, axis, **kw), scl)
    if not returned:
        return avg
    if scl.shape != avg.shape:
        scl = broadcast_to(scl, avg.shape)
    return avg, scl


# ----------------------------------------------------------------------------- cov, corrcoef

def _as_2d(ctx: Any, x: Any, dtype: np.dtype) -> Tracer:
    t = lift(ctx, lift(ctx, x), dtype)
    return reshape(t, (1,) * (2 - t.ndim) + t.shape) if t.ndim < 2 else t


def _checked_weights(ctx: Any, w: Any, n: int, name: str) -> Tracer:
    t = lift(ctx, lift(ctx, w), np.dtype(np.float64))
    if t.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if t.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if name == "fweights":
        t = raise_if(t, apply_ufunc(np.not_equal, t, apply_ufunc(np.rint, t)), "TypeError", "fweights must be integer")
    return raise_if(t, apply_ufunc(np.less, t, 0.0), "ValueError", f"{name} cannot be negative")


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """numpy.cov (rowvar, bias, ddof, fweights, aweights, dtype), NumPy's algorithm."""
    ctx = context_of(m, y, fweights, aweights)
    if ctx is None:
        return np.cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    mt = lift(ctx, m)
    if mt.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    yt = None if y is None else lift(ctx, y)
    if yt is not None and yt.ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dt = np.result_type(mt.dtype, np.float64) if yt is None else np.result_type(mt.dtype, yt.dtype, np.float64)
    else:
        dt = check_dtype(dtype, "the dtype= of cov")
    X = _as_2d(ctx, mt, dt)
    if not rowvar and mt.ndim != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return ctx.const(np.array([]).reshape(0, 0))
    if yt is not None:
        Y = _as_2d(ctx, yt, dt)
        if not rowvar and Y.shape[0] != 1:
            Y = transpose(Y)
        X = concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    aw = None
    if fweights is not None:
        w = _checked_weights(ctx, fweights, X.shape[1], "fweights")
    if aweights is not None:
        aw = _checked_weights(ctx, aweights, X.shape[1], "aweights")
        w = aw if w is None else apply_ufunc(np.multiply, w, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    if w is None:
        fact: Any = X.shape[1] - ddof
        if fact <= 0:
            import warnings
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
            fact = 0.0
        scale: Any = np.true_divide(1, fact) if fact else np.float64(np.inf)
    else:
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = apply_ufunc(np.subtract, w_sum, ddof)
        else:
            fact = apply_ufunc(np.subtract, w_sum, apply_ufunc(
                np.divide, apply_ufunc(np.multiply, ddof, _sum(apply_ufunc(np.multiply, w, aw))), w_sum))
        # NumPy warns and uses 0 when the degrees of freedom are not positive (1 / 0 = inf).
        fact = where(apply_ufunc(np.less_equal, fact, 0.0), 0.0, fact)
        scale = apply_ufunc(np.divide, 1, fact)
    X = lift(ctx, apply_ufunc(np.subtract, X, reshape(avg, (-1, 1))), X.dtype)
    X_T = transpose(X) if w is None else transpose(apply_ufunc(np.multiply, X, w))
    c = dot(X, X_T)
    c = lift(ctx, apply_ufunc(np.multiply, c, scale), c.dtype)  # c *= 1 / fact (same_kind, in place)
    return squeeze(c)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """numpy.corrcoef: cov scaled by the standard deviations, clipped to [-1, 1]."""
    ctx = context_of(x, y)
    if ctx is None:
        return np.corrcoef(x, y, rowvar, dtype=dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim != 2:
        return apply_ufunc(np.divide, c, c)  # NumPy's diag raises for 0-d: c / c
    stddev = apply_ufunc(np.sqrt, diag(c))
    c = lift(ctx, apply_ufunc(np.divide, c, reshape(stddev, (-1, 1))), c.dtype)
    c = lift(ctx, apply_ufunc(np.divide, c, reshape(stddev, (1, -1))), c.dtype)
    return lift(ctx, clip(c, -1, 1), c.dtype)


# ----------------------------------------------------------------------------- ptp, divmod

def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """numpy.ptp: max - min in the array's dtype (integers wrap; bool raises as NumPy)."""
    if context_of(a) is None:
        return np.ptp(a, axis, keepdims=keepdims)
    unsupported_kwargs("ptp", {"out": out}, out=None)
    return apply_ufunc(np.subtract, _max(a, axis, keepdims=keepdims), _min(a, axis, keepdims=keepdims))


def divmod(x1: Any, x2: Any, out: Any = None, **kwargs: Any) -> Any:  # noqa: A001
    """numpy.divmod: (floor_divide, remainder) in divmod's loop dtypes (NumPy's values for
    division by zero, MIN // -1 and float signs; one loop, two outputs)."""
    ctx = context_of(x1, x2)
    if ctx is None:
        return np.divmod(x1, x2)
    unsupported_kwargs("divmod", dict(kwargs, out=out), out=None, where=True, casting="same_kind",
                       order="K", dtype=None, subok=True)
    keys = [dtype_key(v) for v in (x1, x2)]
    if all(isinstance(k, type) for k in keys):
        keys = [WEAK_DEFAULT[k] for k in keys]
    ufunc_loop(np.divmod, keys)  # NumPy's error when divmod has no loop (bool / bool has one)
    return apply_ufunc(np.floor_divide, x1, x2), apply_ufunc(np.remainder, x1, x2)


# ----------------------------------------------------------------------------- NaN reductions

def _replace_nan(ctx: Any, a: Any, value: float) -> tuple[Tracer, Tracer | None]:
    """NumPy's _replace_nan: (a with NaN replaced by value, the NaN mask), or (a, None) for
    dtypes without NaN."""
    t = lift(ctx, a)
    if t.weak is not None:
        t = Tracer(ctx, t.ir_var)
    if t.dtype.kind not in "fc":
        return t, None
    mask = apply_ufunc(np.isnan, t)
    return where(mask, np.asarray(value, t.dtype), t), mask


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.nansum: NaN counts as zero."""
    ctx = context_of(a)
    if ctx is None:
        return np.nansum(a, axis, dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("nansum", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _sum(_replace_nan(ctx, a, 0)[0], axis, dtype, keepdims=keepdims)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.nanprod: NaN counts as one."""
    ctx = context_of(a)
    if ctx is None:
        return np.nanprod(a, axis, dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("nanprod", dict(kw, out=out), out=None, initial=np._NoValue, where=True)
    return _prod(_replace_nan(ctx, a, 1)[0], axis, dtype, keepdims=keepdims)


def _nan_extreme(name: str, a: Any, axis: Any, keepdims: bool, kw: dict) -> Any:
    ctx = context_of(a)
    if ctx is None:
        return getattr(np, name)(a, axis, keepdims=keepdims, **kw)
    unsupported_kwargs(name, kw, out=None, initial=np._NoValue, where=True)
    is_max = name == "nanmax"
    t, mask = _replace_nan(ctx, a, -np.inf if is_max else np.inf)
    res = (_max if is_max else _min)(t, axis, keepdims=keepdims)
    if mask is None:
        return res
    # An all-NaN slice gives NaN (NumPy warns "All-NaN slice encountered").
    all_nan = _all(mask, axis, keepdims=keepdims)
    out = where(all_nan, np.asarray(np.nan, t.dtype), res)
    out.scalar = res.scalar
    return out


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.nanmax: NaN ignored; an all-NaN slice is NaN."""
    return _nan_extreme("nanmax", a, axis, keepdims, dict(kw, out=out))


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.nanmin: NaN ignored; an all-NaN slice is NaN."""
    return _nan_extreme("nanmin", a, axis, keepdims, dict(kw, out=out))


def _nan_arg(name: str, a: Any, axis: Any, keepdims: bool) -> Any:
    ctx = context_of(a)
    if ctx is None:
        return getattr(np, name)(a, axis, keepdims=keepdims)
    is_max = name == "nanargmax"
    t, mask = _replace_nan(ctx, a, -np.inf if is_max else np.inf)
    res = (_argmax if is_max else _argmin)(t, axis, keepdims=keepdims)
    if mask is None or mask.size == 0:
        return res
    return raise_if(res, _all(mask, axis), "ValueError", "All-NaN slice encountered")


def nanargmax(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.nanargmax: an all-NaN slice raises ValueError at run time."""
    return _nan_arg("nanargmax", a, axis, keepdims)


def nanargmin(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.nanargmin: an all-NaN slice raises ValueError at run time."""
    return _nan_arg("nanargmin", a, axis, keepdims)


def _divide_by_counts(ctx: Any, s: Tracer, cnt: Tracer) -> Tracer:
    """NumPy's nanfunctions _divide_by_count: s / cnt in divide's loop, cast back to s's dtype."""
    return lift(ctx, apply_ufunc(np.divide, s, cnt), s.dtype)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    """numpy.nanmean: mean of the non-NaN values (an all-NaN slice is NaN)."""
    ctx = context_of(a)
    if ctx is None:
        return np.nanmean(a, axis, dtype, keepdims=keepdims, **kw)
    unsupported_kwargs("nanmean", dict(kw, out=out), out=None, where=True)
    arr, mask = _replace_nan(ctx, a, 0)
    if mask is None:
        return mean(arr, axis, dtype, keepdims=keepdims)
    if dtype is not None and not issubclass(np.dtype(dtype).type, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    cnt = _sum(apply_ufunc(np.logical_not, mask), axis, dtype=np.intp, keepdims=keepdims)
    tot = _sum(arr, axis, dtype, keepdims=keepdims)
    return _divide_by_counts(ctx, tot, cnt)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False,
           **kw: Any) -> Any:
    """numpy.nanvar (ddof, correction): slices with ddof >= their count of non-NaN values are NaN."""
    ctx = context_of(a)
    if ctx is None:
        return np.nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw)
    correction = kw.pop("correction", np._NoValue)
    unsupported_kwargs("nanvar", dict(kw, out=out), out=None, where=True, mean=np._NoValue)
    arr, mask = _replace_nan(ctx, a, 0)
    if mask is None:
        kwc = {} if correction is np._NoValue else {"correction": correction}
        return var(arr, axis, dtype, ddof=ddof, keepdims=keepdims, **kwc)
    if dtype is not None:
        dtype = np.dtype(dtype)
        if not issubclass(dtype.type, np.inexact):
            raise TypeError("If a is inexact, then dtype must be inexact")
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    cnt = _sum(apply_ufunc(np.logical_not, mask), axis, dtype=np.intp, keepdims=True)
    avg = _divide_by_counts(ctx, _sum(arr, axis, dtype, keepdims=True), cnt)
    dev = lift(ctx, apply_ufunc(np.subtract, arr, avg), arr.dtype)  # out=arr, casting="unsafe"
    dev = where(mask, np.asarray(0, arr.dtype), dev)
    sqr = apply_ufunc(np.multiply, dev, dev)
    v = _sum(sqr, axis, dtype, keepdims=keepdims)
    if v.ndim < cnt.ndim:
        cnt = reshape(cnt, v.shape) if axis is not None else reshape(cnt, ())
    dof = apply_ufunc(np.subtract, cnt, ddof)
    v = _divide_by_counts(ctx, v, dof)
    out_v = where(apply_ufunc(np.less_equal, dof, 0), np.asarray(np.nan, v.dtype), v)
    out_v.scalar = v.scalar
    return out_v


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False,
           **kw: Any) -> Any:
    """numpy.nanstd: sqrt of nanvar."""
    if context_of(a) is None:
        return np.nanstd(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw)
    return apply_ufunc(np.sqrt, nanvar(a, axis, dtype, out, ddof, keepdims, **kw))


# ----------------------------------------------------------------------------- order statistics
# median, quantile and percentile sort the traced data with numpy.sort (a library step of the
# sorting module, when it is registered) and then follow NumPy's _median / _quantile ("linear"
# method): the positions and interpolation weights depend only on the shape and the static q,
# so NumPy's own helpers compute them at trace time.

def _sorted_along_front(ctx: Any, a: Any, axis: Any, fname: str) -> tuple[Tracer, tuple[int, ...], tuple]:
    """(the data sorted along a new axis 0 holding every reduced axis, the reduced axes, the
    kept shape), as NumPy's _ureduce merges a tuple of axes."""
    t = lift(ctx, a)
    if t.weak is not None:
        t = Tracer(ctx, t.ir_var)
    axes = normalize_axes(axis, t.ndim)
    kept = [d for d in range(t.ndim) if d not in axes]
    moved = transpose(t, tuple(axes) + tuple(kept)) if t.ndim else t
    kept_shape = tuple(t.shape[d] for d in kept)
    # One reduced axis: its length (NumPy reduces along it; -1 cannot stand for it when a kept
    # axis is empty). Several: -1, as NumPy's _ureduce reshapes, raising NumPy's ValueError there.
    lead = t.shape[axes[0]] if len(axes) == 1 else -1
    flat = reshape(moved, (lead,) + kept_shape)
    try:
        ordered = np.sort(flat, axis=0)
    except UnsupportedOperationError:
        raise UnsupportedOperationError(
            f"numpy.{fname} needs numpy.sort of the traced data, which is not supported here; compute it "
            "outside the jitted function, or pass the sorted array in") from None
    return ordered, axes, kept_shape


def _keepdims_shape(ndim_in: int, axes: tuple[int, ...], shape_in: tuple, lead: tuple) -> tuple:
    return lead + tuple(1 if d in axes else shape_in[d] for d in range(ndim_in))


def _nan_fix(result: Tracer, ordered: Tracer) -> Tracer:
    """NumPy puts the NaN of a slice that holds one (it sorts last) into that slice's result."""
    last = ordered[-1]
    fixed = where(apply_ufunc(np.isnan, last), lift(ordered._ctx, last, result.dtype), result)
    fixed.scalar = result.scalar
    return fixed


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """numpy.median: mean of the middle one or two sorted values; NaN if the slice holds one."""
    ctx = context_of(a)
    if ctx is None:
        return np.median(a, axis, out, overwrite_input, keepdims)
    unsupported_kwargs("median", {"out": out}, out=None)
    t = lift(ctx, a)
    ordered, axes, kept = _sorted_along_front(ctx, t, axis, "median")
    n = ordered.shape[0]
    half = n // 2
    middle = ordered[half:half + 1] if n % 2 == 1 else ordered[max(half - 1, 0):half + 1]
    result = mean(middle, axis=0)
    if t.dtype.kind in "fc" and n > 0:
        result = _nan_fix(result, ordered)
    return reshape(result, _keepdims_shape(t.ndim, axes, t.shape, ())) if keepdims and t.ndim else result


def _quantile_unchecked(fname: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
                        weak_q: bool) -> Any:
    ctx = context_of(a)
    from numpy.lib import _function_base_impl as fb
    props = method_properties(method)
    t = lift(ctx, a)
    ordered, axes, kept = _sorted_along_front(ctx, t, axis, fname)
    n = ordered.shape[0]
    # NumPy's _quantile: n is static, so its own helpers give the positions and weights.
    virtual = np.asanyarray(props["get_virtual_index"](n, q))
    if n == 0 and (t.dtype.kind == "f" or virtual.size):
        # NumPy indexes the empty axis: its NaN check reads the last element (floats), its take
        # the positions (the others); IndexError either way, whatever q's shape
        raise IndexError("index -1 is out of bounds for axis 0 with size 0" if t.dtype.kind == "f"
                         else "cannot do a non-empty take from an empty axes.")
    if props["fix_gamma"] is None or (method == "linear" and np.issubdtype(virtual.dtype, np.integer)):
        result = _take_front(ctx, ordered, virtual)
    else:
        previous, nxt = fb._get_indexes(np.empty(0, t.dtype), virtual, n)
        gamma = fb._get_gamma(virtual, previous, props)
        lo, hi = _take_front(ctx, ordered, previous), _take_front(ctx, ordered, nxt)
        if weak_q:
            g: Any = float(gamma)
        else:
            g = ctx.const(np.asarray(gamma).reshape(virtual.shape + (1,) * (ordered.ndim - 1)))
        result = _lerp(lo, hi, g, gamma)
    if t.dtype.kind in "fc" and n > 0:
        result = _nan_fix(result, ordered)
    if keepdims and t.ndim:
        result = reshape(result, _keepdims_shape(t.ndim, axes, t.shape, virtual.shape))
    return result


def method_properties(method: str) -> dict:
    """NumPy's table entry for a quantile method (its ValueError for an unknown one)."""
    from numpy.lib import _function_base_impl as fb
    try:
        return fb._QuantileMethods[method]
    except (KeyError, TypeError):
        raise ValueError(f"{method!r} is not a valid method. Use one of: {fb._QuantileMethods.keys()}") from None


def weighted_inverted_cdf(ctx: Any, t: Tracer, q: np.ndarray, axis: Any, weights: Any, keepdims: bool,
                          fname: str, skip_nan: bool = False) -> Tracer:
    """NumPy's weighted _quantile (method 'inverted_cdf'): the data sorted with its weights
    (argsort), the float64 cumulative weights normalized by their total (cast to q's float
    dtype) and, for each q, the first position whose cdf reaches q (searchsorted 'left' is the
    count of cdf values below q). Zero cdf values count as -1, as NumPy sets them, so leading
    zero weights are skipped at q = 0. NumPy's ValueErrors on data are run-time checks.
    skip_nan: nanquantile's rule (NaNs and their weights dropped, an all-NaN slice is NaN)."""
    from numpy.lib.array_utils import normalize_axis_tuple
    if t.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if axis is not None:
        axis = normalize_axis_tuple(axis, t.ndim, argname="axis")
    wgt = broadcast_to(_weights_are_valid(ctx, weights, t, axis), t.shape)
    wgt = raise_if(wgt, apply_ufunc(np.less, wgt, 0), "ValueError", "Weights must be non-negative.")
    axes = normalize_axes(axis, t.ndim)
    kept = [d for d in range(t.ndim) if d not in axes]
    kept_shape = tuple(t.shape[d] for d in kept)

    def front(x: Tracer) -> Tracer:
        moved = transpose(x, tuple(axes) + tuple(kept)) if x.ndim else x
        return reshape(moved, (-1,) + kept_shape)

    flat, wflat = front(t), front(wgt)
    # Stable: NumPy's default argsort orders ties its own way, but tied values are equal, so the
    # value found is the same (only the rounding of the cdf inside a run of ties could differ).
    order = np.argsort(flat, axis=0, kind="stable")
    arr = np.take_along_axis(flat, order, axis=0)
    w = np.take_along_axis(wflat, order, axis=0)
    n = arr.shape[0]
    nan_last = apply_ufunc(np.isnan, arr[-1]) if t.dtype.kind == "f" else None
    if skip_nan and nan_last is not None:
        w = where(apply_ufunc(np.isnan, arr), np.asarray(0, w.dtype), w)
        count = _sum(apply_ufunc(np.logical_not, apply_ufunc(np.isnan, arr)), axis=0)
    cdf = cumsum(w, axis=0, dtype=np.float64)
    cdf = apply_ufunc(np.divide, cdf, cdf[-1])
    bad = apply_ufunc(np.isnan, cdf[-1])
    if skip_nan and nan_last is not None:
        bad = apply_ufunc(np.logical_and, bad, apply_ufunc(np.greater, count, 0))
    cdf = raise_if(cdf, bad, "ValueError", "Weights included NaN, inf or were all zero.")
    if q.dtype.kind == "f":
        cdf = lift(ctx, cdf, q.dtype)
    cdf = where(apply_ufunc(np.equal, cdf, 0), np.asarray(-1, cdf.dtype), cdf)
    last = (apply_ufunc(np.maximum, apply_ufunc(np.subtract, count, 1), 0)
            if skip_nan and nan_last is not None else n - 1)
    parts = []
    for qi in q.reshape(-1):
        index = _sum(apply_ufunc(np.less, cdf, ctx.const(np.asarray(qi))), axis=0, dtype=np.intp)
        index = apply_ufunc(np.minimum, index, last)
        taken = np.take_along_axis(arr, reshape(index, (1,) + index.shape), axis=0)
        part = reshape(taken, index.shape)
        if skip_nan and nan_last is not None:
            part = where(apply_ufunc(np.equal, count, 0), np.asarray(np.nan, part.dtype), part)
        elif nan_last is not None:
            part = where(nan_last, arr[-1], part)  # a slice holding NaN gives that NaN
        parts.append(part)
    result = parts[0] if q.ndim == 0 else reshape(stack(parts), q.shape + kept_shape)
    if keepdims and t.ndim:
        result = reshape(result, _keepdims_shape(t.ndim, axes, t.shape, q.shape))
    out = lift(ctx, result)
    out.scalar = result.ndim == 0
    return out


def _take_front(ctx: Any, ordered: Tracer, index: np.ndarray) -> Tracer:
    """ordered[index] along axis 0 for a static index array of any shape."""
    if index.ndim == 0:
        return ordered[int(index)]
    taken = _gather(ctx, ordered, 0, index.reshape(-1) % max(ordered.shape[0], 1))
    return reshape(taken, index.shape + ordered.shape[1:])


def _lerp(a: Tracer, b: Tracer, t: Any, gamma: np.ndarray) -> Tracer:
    """NumPy's _lerp: a + (b - a) * t, and b - (b - a) * (1 - t) where t >= 0.5."""
    diff = apply_ufunc(np.subtract, b, a)
    low = apply_ufunc(np.add, a, apply_ufunc(np.multiply, diff, t))
    one_minus = (1 - t) if isinstance(t, float) else apply_ufunc(np.subtract, 1, t)
    high = lift(a._ctx, apply_ufunc(np.subtract, b, apply_ufunc(np.multiply, diff, one_minus)), low.dtype)
    if isinstance(t, float):
        return high if t >= 0.5 else low
    upper = a._ctx.const(np.asarray(gamma >= 0.5).reshape(t.shape))
    out = where(upper, high, low)
    out.scalar = low.scalar
    return out


def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None, interpolation: Any = None) -> Any:
    """numpy.quantile with a static q: every method, weights= with 'inverted_cdf'."""
    ctx = context_of(a, weights)
    if ctx is None or not (isinstance(a, Tracer) or isinstance(weights, Tracer)):
        return np.quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights, interpolation=interpolation)
    unsupported_kwargs("quantile", {"out": out, "interpolation": interpolation}, out=None, interpolation=None)
    qa, weak_q = static_fraction(q, "quantile", percent=False)
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        return weighted_inverted_cdf(ctx, lift(ctx, a), qa, axis, weights, keepdims, "quantile")
    return _quantile_unchecked("quantile", a, qa, axis, method, keepdims, weak_q)


def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None, interpolation: Any = None) -> Any:
    """numpy.percentile with a static q: every method, weights= with 'inverted_cdf'."""
    ctx = context_of(a, weights)
    if ctx is None or not (isinstance(a, Tracer) or isinstance(weights, Tracer)):
        return np.percentile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights, interpolation=interpolation)
    unsupported_kwargs("percentile", {"out": out, "interpolation": interpolation}, out=None, interpolation=None)
    qa, weak_q = static_fraction(q, "percentile", percent=True)
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        return weighted_inverted_cdf(ctx, lift(ctx, a), qa, axis, weights, keepdims, "percentile")
    return _quantile_unchecked("percentile", a, qa, axis, method, keepdims, weak_q)


def static_fraction(q: Any, fname: str, percent: bool) -> tuple[np.ndarray, bool]:
    """A static q as the fraction NumPy's quantile code works with (q / 100 for the percentile
    functions), NumPy's range check, and whether q was a Python scalar (it promotes weakly)."""
    _static_q(q, fname)
    qa = np.asanyarray(np.true_divide(q, 100) if percent else q)
    from numpy.lib import _function_base_impl as fb
    if not fb._quantile_is_valid(qa):
        raise ValueError("Percentiles must be in the range [0, 100]" if percent else "Quantiles must be in the range [0, 1]")
    return qa, type(q) in (int, float)


def _static_q(q: Any, fname: str) -> None:
    if isinstance(q, Tracer) or (isinstance(q, (list, tuple)) and any(isinstance(v, Tracer) for v in q)):
        raise UnsupportedOperationError(f"numpy.{fname}: a traced q is not supported inside jit (pass it as a static argument)")


def _sort_note(partly: str | None) -> Any:
    """The support table's note, decided when the table is generated: these need numpy.sort."""
    def note() -> str | None:
        if np.sort not in _table():
            return "unsupported: needs numpy.sort of traced data, which is not registered"
        return partly
    return note


quantile.__jk_support__ = percentile.__jk_support__ = _sort_note("partly: q must be static (every method, weights= with 'inverted_cdf')")
median.__jk_support__ = _sort_note(None)
