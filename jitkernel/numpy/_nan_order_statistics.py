"""nanmedian, nanquantile and nanpercentile: the order statistics of the non-NaN elements.

NumPy removes the NaNs of each slice and takes the median or quantile of what is left
(numpy/lib/_nanfunctions_impl.py). Inside jit the slice keeps its length: it is sorted (NaNs
sort last, numpy/_statistics.py's _sorted_along_front merges the reduced axes), the number k
of non-NaN elements is counted, and the wanted positions, which depend on k, are gathered
with traced indices. The arithmetic is NumPy's for a slice of k elements:

- nanmedian: the middle element (k odd) or the mean of the middle two (k even).
- nanquantile/nanpercentile ('linear' method, static q): NumPy's virtual index
  `(k - 1) * q` in q's dtype, floor and clipping as _get_indexes, gamma
  weak for a Python-scalar q, and NumPy's _lerp (`a + d*t`, `b - d*(1 - t)` where t >= 0.5).

A slice with no non-NaN element gives NaN (NumPy also warns "All-NaN slice encountered";
inside jit there is no warning: the values are not known while tracing). Arrays that cannot
hold NaN take numpy.median/quantile/percentile, as NumPy's do; empty arrays take nanmean.
One difference in dtype: NumPy gives an all-NaN slice the array's dtype (np.full(q.shape,
nan, arr.dtype)) even where a non-empty slice's result is float64 (float32 data, a q that
is an array), so its result dtype depends on the data; here it is always the non-empty one.

>>> import numpy as np, jitkernel as jk
>>> float(jk.jit(np.nanmedian)(np.array([3.0, np.nan, 1.0, 2.0, np.nan])))
2.0
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import context_of, lift, unsupported_kwargs
from ..trace.tracer import Tracer
from ._reductions import mean, sum as _sum
from ._shape import reshape, stack
from ._statistics import static_fraction, _keepdims_shape, _quantile_unchecked, _sorted_along_front, median, nanmean
from ._ufuncs import apply_ufunc, where
from ._statistics import method_properties
from ._statistics import weighted_inverted_cdf

__all__ = ["nanmedian", "nanquantile", "nanpercentile"]


def _array(ctx: Any, a: Any) -> Tracer:
    t = lift(ctx, a)
    return lift(ctx, t, t.dtype) if t.weak is not None else t


def _at(ordered: Tracer, index: Tracer) -> Tracer:
    """ordered[index[...], ...] along axis 0, one traced index per kept position."""
    taken = np.take_along_axis(ordered, reshape(index, (1,) + index.shape), axis=0)
    return reshape(taken, index.shape)


def _counted(ctx: Any, t: Tracer, axis: Any, fname: str) -> tuple[Tracer, Tracer, tuple]:
    """(the data sorted along a new axis 0, the non-NaN count of each slice, reduced axes)."""
    ordered, axes, _ = _sorted_along_front(ctx, t, axis, fname)
    k = _sum(apply_ufunc(np.logical_not, apply_ufunc(np.isnan, ordered)), axis=0)
    return ordered, k, axes


def _keepdims(result: Tracer, t: Tracer, axes: tuple, lead: tuple, keepdims: Any) -> Tracer:
    if keepdims is np._NoValue or not keepdims or not t.ndim:
        return result
    return reshape(result, _keepdims_shape(t.ndim, axes, t.shape, lead))


def _nan_where_empty(ctx: Any, result: Tracer, k: Tracer) -> Tracer:
    out = where(apply_ufunc(np.equal, k, 0), lift(ctx, np.nan, result.dtype), result)
    out.scalar = result.scalar
    return out


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: Any = np._NoValue) -> Any:
    """numpy.nanmedian: the median of each slice's non-NaN elements."""
    ctx = context_of(a)
    if ctx is None:
        return np.nanmedian(a, axis, out, overwrite_input, keepdims)
    unsupported_kwargs("nanmedian", {"out": out}, out=None)
    t = _array(ctx, a)
    kw = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if t.size == 0:
        return nanmean(t, axis, **kw)
    if t.dtype.kind not in "fc":
        return median(t, axis, keepdims=bool(keepdims) if keepdims is not np._NoValue else False)
    ordered, k, axes = _counted(ctx, t, axis, "nanmedian")
    lo_index = apply_ufunc(np.maximum, apply_ufunc(np.floor_divide, apply_ufunc(np.subtract, k, 1), 2), 0)
    hi_index = apply_ufunc(np.floor_divide, k, 2)
    hi_index = apply_ufunc(np.minimum, hi_index, max(ordered.shape[0] - 1, 0))
    lo, hi = _at(ordered, lo_index), _at(ordered, hi_index)
    middle = mean(stack([lo, hi]), axis=0)
    result = where(apply_ufunc(np.equal, apply_ufunc(np.remainder, k, 2), 1), lift(ctx, lo, middle.dtype), middle)
    result = _nan_where_empty(ctx, lift(ctx, result), k)
    return _keepdims(result, t, axes, (), keepdims)


def _weak_float(t: Tracer) -> Tracer:
    """A float64 value standing for a Python float (weak under NEP 50)."""
    out = Tracer(t._ctx, t.ir_var)
    out.weak = float
    return out


def _lerp(a: Tracer, b: Tracer, t: Any) -> Tracer:
    """NumPy's _lerp: a + (b - a)*t, and b - (b - a)*(1 - t) where t >= 0.5."""
    diff = apply_ufunc(np.subtract, b, a)
    low = apply_ufunc(np.add, a, apply_ufunc(np.multiply, diff, t))
    one_minus = apply_ufunc(np.subtract, 1, t)
    if isinstance(t, Tracer) and t.weak is float:
        one_minus = _weak_float(one_minus)  # NumPy's 1 - t of a Python float t: a Python float
    high = apply_ufunc(np.subtract, b, apply_ufunc(np.multiply, diff, one_minus))
    return where(apply_ufunc(np.greater_equal, t, 0.5), lift(a._ctx, high, low.dtype), low)


# Each method's virtual index as NumPy computes it (numpy/lib/_function_base_impl.py's
# _QuantileMethods) for a slice of n = k non-NaN elements, k traced: (alpha, beta) of
# _compute_virtual_index for the continuous methods.
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}


def _const(ctx: Any, value: Any) -> Tracer:
    return ctx.const(np.asarray(value))


def _virtual_index(ctx: Any, method: str, k: Tracer, q: np.ndarray) -> Tracer:
    """NumPy's get_virtual_index(n, q) with n = k traced: n a Python int there, so q's dtype
    decides (k is cast to it), and the constants are NumPy's own values computed here."""
    n = lift(ctx, k, np.result_type(0, q))  # a Python int (weak) times q
    qc = _const(ctx, q)
    nq = apply_ufunc(np.multiply, n, qc)
    if method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        return apply_ufunc(np.subtract, apply_ufunc(np.add, nq, _const(ctx, alpha + q * (1 - alpha - beta))), 1)
    if method == "inverted_cdf":
        return _discrete_boundaries(ctx, apply_ufunc(np.subtract, nq, 1), closest=False)
    if method == "closest_observation":
        return _discrete_boundaries(ctx, apply_ufunc(np.subtract, apply_ufunc(np.subtract, nq, 1), 0.5), closest=True)
    if method == "averaged_inverted_cdf":
        return apply_ufunc(np.subtract, nq, 1)
    linear = apply_ufunc(np.multiply, apply_ufunc(np.subtract, n, 1), qc)  # (n - 1) * quantiles
    if method == "linear":
        return linear
    intp = np.dtype(np.intp)
    if method in ("lower", "higher", "nearest"):
        ufunc = {"lower": np.floor, "higher": np.ceil, "nearest": np.rint}[method]  # np.around(x) is rint
        return lift(ctx, apply_ufunc(ufunc, linear), intp)
    assert method == "midpoint"
    return apply_ufunc(np.multiply, 0.5, apply_ufunc(np.add, apply_ufunc(np.floor, linear), apply_ufunc(np.ceil, linear)))


def _discrete_boundaries(ctx: Any, index: Tracer, closest: bool) -> Tracer:
    """NumPy's _discrete_interpolation_to_boundaries: the previous or next integer position
    (previous where the fraction is 0, and for closest_observation the floor is odd), >= 0."""
    previous = apply_ufunc(np.floor, index)
    nxt = apply_ufunc(np.add, previous, 1)
    gamma = apply_ufunc(np.subtract, index, previous)
    cond = apply_ufunc(np.equal, gamma, 0)
    if closest:
        cond = apply_ufunc(np.logical_and, cond, apply_ufunc(np.equal, apply_ufunc(np.remainder, previous, 2), 1))
    # np.full(shape, next) (float64) with previous copied in: then astype(intp)
    res = lift(ctx, where(cond, previous, lift(ctx, nxt, np.dtype(np.float64))), np.dtype(np.intp))
    return apply_ufunc(np.maximum, res, 0)


def _fixed_gamma(ctx: Any, method: str, gamma: Tracer, virtual: Tracer) -> Tracer:
    """NumPy's fix_gamma of the method, cast to the virtual index's dtype (_get_gamma)."""
    if method == "averaged_inverted_cdf":
        gamma = where(apply_ufunc(np.equal, gamma, 0), 0.5, 1.0)
    elif method == "midpoint":
        gamma = where(apply_ufunc(np.equal, apply_ufunc(np.remainder, virtual, 1), 0), 0.0, 0.5)
    return lift(ctx, gamma, virtual.dtype)


def _one_quantile(ctx: Any, ordered: Tracer, k: Tracer, q: np.ndarray, weak_q: bool, method: str) -> Tracer:
    """NumPy's _quantile of each slice's k non-NaN elements at one static q."""
    props = method_properties(method)
    last = max(ordered.shape[0] - 1, 0)
    clip = lambda i: apply_ufunc(np.minimum, apply_ufunc(np.maximum, i, 0), last)  # noqa: E731
    k_minus_1 = apply_ufunc(np.subtract, k, 1)
    top = apply_ufunc(np.maximum, k_minus_1, 0)  # NumPy's index -1: the last non-NaN element
    virtual = _virtual_index(ctx, method, k, q)
    if props["fix_gamma"] is None or (method == "linear" and virtual.dtype.kind in "iu"):
        return _at(ordered, clip(virtual))  # np.take; these indices lie in [0, k - 1]
    # NumPy's _get_indexes: floor, +1, -1 (the last) above n - 1, 0 below 0, as intp
    floor = apply_ufunc(np.floor, virtual)
    above = apply_ufunc(np.greater_equal, virtual, lift(ctx, k_minus_1, np.dtype(np.intp)))
    below = apply_ufunc(np.less, virtual, 0)
    intp = np.dtype(np.intp)
    previous = where(above, -1, where(below, 0, lift(ctx, floor, intp)))
    nxt = where(above, -1, where(below, 0, lift(ctx, apply_ufunc(np.add, floor, 1), intp)))
    at = lambda i: _at(ordered, clip(where(apply_ufunc(np.equal, i, -1), top, i)))  # noqa: E731
    lo, hi = at(previous), at(nxt)
    gamma = _fixed_gamma(ctx, method, apply_ufunc(np.subtract, virtual, previous), virtual)
    if weak_q:
        gamma = _weak_float(lift(ctx, gamma, np.dtype(np.float64)))  # NumPy: gamma = float(gamma)
    return _lerp(lo, hi, gamma)


def _nan_quantile(fname: str, a: Any, q: np.ndarray, axis: Any, method: str, keepdims: Any, weak_q: bool) -> Any:
    ctx = context_of(a)
    t = _array(ctx, a)
    if t.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    method_properties(method)  # NumPy's ValueError for an unknown method
    if t.size == 0:
        return nanmean(t, axis, **({} if keepdims is np._NoValue else {"keepdims": keepdims}))
    if t.dtype.kind != "f":
        return _quantile_unchecked(fname, t, q, axis, method, bool(keepdims) if keepdims is not np._NoValue else False,
                                   weak_q)
    ordered, k, axes = _counted(ctx, t, axis, fname)
    parts = [_one_quantile(ctx, ordered, k, qi, weak_q, method) for qi in q.reshape(-1)]
    parts = [_nan_where_empty(ctx, lift(ctx, p), k) for p in parts]
    result = parts[0] if q.ndim == 0 else reshape(stack(parts), q.shape + k.shape)
    return _keepdims(result, t, axes, q.shape, keepdims)


def _weighted(fname: str, ctx: Any, a: Any, q: np.ndarray, axis: Any, method: str, keepdims: Any,
              weights: Any) -> Tracer:
    """NumPy's weighted nanquantile ('inverted_cdf' only): each slice's NaNs and their weights
    dropped, an all-NaN slice NaN; an empty array takes nanmean, as NumPy's does."""
    if method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    t = _array(ctx, a)
    if t.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if t.size == 0:
        return nanmean(t, axis, **({} if keepdims is np._NoValue else {"keepdims": keepdims}))
    return weighted_inverted_cdf(ctx, t, q, axis, weights, bool(keepdims) if keepdims is not np._NoValue else False,
                                 fname, skip_nan=True)


def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: Any = np._NoValue, *, weights: Any = None) -> Any:
    """numpy.nanquantile with a static q: every method, weights= with 'inverted_cdf'."""
    ctx = context_of(a, weights)
    if ctx is None or not (isinstance(a, Tracer) or isinstance(weights, Tracer)):
        return np.nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    unsupported_kwargs("nanquantile", {"out": out}, out=None)
    qa, weak_q = static_fraction(q, "nanquantile", percent=False)
    if weights is not None:
        return _weighted("nanquantile", ctx, a, qa, axis, method, keepdims, weights)
    return _nan_quantile("nanquantile", a, qa, axis, method, keepdims, weak_q)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: Any = np._NoValue, *, weights: Any = None) -> Any:
    """numpy.nanpercentile with a static q: every method, weights= with 'inverted_cdf'."""
    ctx = context_of(a, weights)
    if ctx is None or not (isinstance(a, Tracer) or isinstance(weights, Tracer)):
        return np.nanpercentile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
    unsupported_kwargs("nanpercentile", {"out": out}, out=None)
    qa, weak_q = static_fraction(q, "nanpercentile", percent=True)
    if weights is not None:
        return _weighted("nanpercentile", ctx, a, qa, axis, method, keepdims, weights)
    return _nan_quantile("nanpercentile", a, qa, axis, method, keepdims, weak_q)


nanmedian.__jk_support__ = "partly: out= unsupported; an all-NaN slice gives NaN without NumPy's warning"
nanquantile.__jk_support__ = nanpercentile.__jk_support__ = \
    "partly: q must be static (every method, weights= with 'inverted_cdf'); an all-NaN slice gives NaN without NumPy's warning"
