"""sinc, trapezoid, polyval and nan_to_num: NumPy's Python functions, traced step by step.

Each follows NumPy 2.4's own code (numpy/lib/_function_base_impl.py, _polynomial_impl.py,
_type_check_impl.py) with the traced ufuncs, so dtypes (NEP 50 weak Python scalars against
NumPy's strong scalars and arrays), rounding steps and errors are NumPy's, and derivatives and
batching come from the primitives they are made of:

- sinc: NumPy's value (`sin(pi x) / (pi x)`, 1 at 0); at 0 the derivatives of every order
  are sin(u)/u's Maclaurin coefficients (a custom_jvp, as JAX does), where NumPy's `where(x, x,
  eps)` would give a second derivative of 0 instead of -pi**2/3.
- trapezoid: `sum(d * (y[1:] + y[:-1]) / 2.0, axis)`, d = dx or diff(x).
- polyval: Horner's loop `y = zeros_like(x); for pv in p: y = y * x + pv`, unrolled over p's
  first axis (its length is static), p a list, an array or traced.
- nan_to_num: nan, +inf and -inf replaced elementwise (real and imaginary parts separately),
  replacements cast to the part's dtype by copyto's same_kind rule (NumPy's TypeError and its
  broadcast ValueError); integers and bool are returned unchanged. `copy=False` writes the
  result into the traced array (the in-place machinery: a caller's argument sees it, as with
  NumPy); the returned array is a new one inside jit (see docs/vector-and-integer-functions.md).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda p, x: np.polyval(p, x))(np.array([3.0, 0.0, 1.0]), np.array([5.0]))
array([76.])
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.operands import broadcast_to_shape, context_of, lift, shape_of, weak_type
from ..trace.tracer import Tracer
from ._reductions import sum as _sum
from ._shape import reshape
from ._ufuncs import apply_ufunc, where
from ..transforms.ad import stop_gradient
from ..transforms.custom import custom_jvp
from ._complex import imag, real
from ._cumulative import diff

__all__ = ["sinc", "trapezoid", "polyval", "nan_to_num"]


def _asanyarray(ctx: Any, x: Any) -> Tracer:
    """np.asanyarray(x) in the trace: a strong array (a Python scalar becomes its default dtype)."""
    t = lift(ctx, x)
    return lift(ctx, t, t.dtype) if t.weak is not None else t


# ----------------------------------------------------------------------------- sinc

def sinc(x: Any) -> Any:
    """numpy.sinc: sin(pi x) / (pi x), 1 at 0 (ints and bool give float64; float16/32 stay).

    The value is NumPy's (at 0 its formula gives exactly 1). The derivatives at 0 come from
    sin(u)/u's Maclaurin series, to every order (JAX's construction): NumPy's `where(x, x, eps)`
    would make the first derivative 0 by luck and the second 0 instead of -pi**2/3."""
    ctx = context_of(x)
    if ctx is None:
        return np.sinc(x)
    t = apply_ufunc(np.multiply, np.pi, _asanyarray(ctx, x))  # pi * x: a weak pi keeps float32
    # Below sqrt(eps) NumPy's sin(u)/u is exactly 1 (u**2 / 6 is under half an ulp), so the
    # series gives NumPy's value there, and derivatives that the quotient's would lose to
    # cancellation (d/dx of sin(u)/u at x = 1e-70 came out near 1e53).
    small = np.sqrt(np.finfo(t.dtype).eps) if t.dtype.kind in "fc" else 1e-8
    at_zero = apply_ufunc(np.less, apply_ufunc(np.absolute, t), small)
    safe = where(at_zero, 1, t)
    away = apply_ufunc(np.divide, apply_ufunc(np.sin, safe), safe)
    if t.aval.is_symbolic:  # a data-dependent size: not differentiated (jitkernel refuses), plain value
        return where(at_zero, 1, away)
    # Just above sqrt(eps) the quotient's k-th derivative loses about eps / u**k to cancellation
    # (sinc''(1.2e-7) came out 0.7% off): below 0.1 the derivatives are the Maclaurin
    # polynomial's, and the value stays NumPy's quotient: poly + stop_gradient(quotient - poly)
    # is the quotient exactly (the two agree to an ulp, so their difference is exact).
    near = apply_ufunc(np.less, apply_ufunc(np.absolute, t), 0.1)
    poly = _sinc_series(t)
    banded = apply_ufunc(np.add, poly, stop_gradient(apply_ufunc(np.subtract, away, poly)))
    return where(at_zero, _sinc_maclaurin(0)(t), where(near, banded, away))


def _sinc_series(u: Tracer) -> Tracer:
    """sin(u)/u's Maclaurin polynomial through u**10 (the next term is under 2e-22 for |u| < 0.1)."""
    u2 = apply_ufunc(np.multiply, u, u)
    acc = (-1) ** 5 / math.factorial(11)  # Horner from u**10's coefficient: (-1)**n / (2n + 1)!
    for n in (4, 3, 2, 1, 0):
        acc = apply_ufunc(np.add, apply_ufunc(np.multiply, u2, acc), (-1) ** n / math.factorial(2 * n + 1))
    return acc


_SINC_MACLAURIN: dict[int, Any] = {}


def _sinc_maclaurin(k: int) -> Any:
    """u -> the k-th derivative of sin(u)/u at u = 0 ((-1)**(k/2) / (k + 1) for even k, 0 for
    odd), as a function of u whose derivative is the (k + 1)-th: selected where u == 0, it
    gives sinc's derivatives there to any order (custom_jvp, built once per order)."""
    if k not in _SINC_MACLAURIN:
        value = 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1)

        def at_zero(u: Tracer) -> Tracer:
            return apply_ufunc(np.add, apply_ufunc(np.multiply, u, 0), value)
        f = custom_jvp(at_zero)
        f.__name__ = f"sinc_maclaurin_{k}"

        def rule(primals: tuple, tangents: tuple) -> tuple:
            (u,), (tu,) = primals, tangents
            return f(u), apply_ufunc(np.multiply, _sinc_maclaurin(k + 1)(u), tu)
        f.defjvp(rule)
        _SINC_MACLAURIN[k] = f
    return _SINC_MACLAURIN[k]


# ----------------------------------------------------------------------------- trapezoid

def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """numpy.trapezoid: the trapezoidal rule along `axis`, with sample points x (1-d along the
    axis, or y's shape) or a spacing dx (a number or an array that broadcasts)."""
    ctx = context_of(y, x, dx)
    if ctx is None:
        return np.trapezoid(y, x, dx, axis)
    yt = _asanyarray(ctx, y)
    if x is None:
        d = dx
    else:
        xt = _asanyarray(ctx, x)
        if xt.ndim == 1:
            d = diff(xt)
            shape = [1] * yt.ndim
            shape[axis] = d.shape[0]  # NumPy's IndexError for an axis beyond y's rank
            d = reshape(d, tuple(shape))
        else:
            d = diff(xt, axis=axis)
    nd = yt.ndim
    slice1 = [slice(None)] * nd
    slice2 = [slice(None)] * nd
    slice1[axis] = slice(1, None)
    slice2[axis] = slice(None, -1)
    pair = apply_ufunc(np.add, yt[tuple(slice1)], yt[tuple(slice2)])
    return _sum(apply_ufunc(np.divide, apply_ufunc(np.multiply, d, pair), 2.0), axis)


# ----------------------------------------------------------------------------- polyval

def polyval(p: Any, x: Any) -> Any:
    """numpy.polyval: Horner's rule over p's first axis, in NumPy's order and dtypes (p's
    elements are strong scalars: polyval([1, 2], float32 array) is float64, as NumPy)."""
    ctx = context_of(p, x)
    if ctx is None:
        return np.polyval(p, x)
    if isinstance(x, np.poly1d):
        raise UnsupportedOperationError("numpy.polyval with a poly1d x is not supported inside jit")
    coefficients = _asanyarray(ctx, p) if isinstance(p, Tracer) else np.asarray(p)
    xt = _asanyarray(ctx, x)
    y = broadcast_to_shape(ctx, ctx.const(np.zeros((), xt.dtype)), xt.shape)  # zeros_like(x)
    for i in range(len(coefficients)):
        y = apply_ufunc(np.add, apply_ufunc(np.multiply, y, xt), coefficients[i])
    return y


# ----------------------------------------------------------------------------- nan_to_num

def _replacement(ctx: Any, value: Any, part: Tracer) -> Tracer:
    """`value` as np.copyto(part, value, where=...) stores it: cast by the same_kind rule (a
    Python scalar by its kind, NEP 50) and broadcast to part's shape, with copyto's errors."""
    if isinstance(value, Tracer):
        stand_in = weak_type(value)(0) if value.weak is not None else np.zeros((), value.dtype)
    else:
        stand_in = value if weak_type(value) is not None else np.zeros((), np.asarray(value).dtype)
    np.copyto(np.zeros((), part.dtype), stand_in, casting="same_kind")  # NumPy's TypeError
    shape = tuple(shape_of(value))
    if np.broadcast_shapes(shape, part.shape) != part.shape:
        raise ValueError(f"could not broadcast input array from shape {shape} into shape {part.shape}")
    with np.errstate(over="ignore"):  # 1e300 into float32 is inf, as copyto stores it
        return broadcast_to_shape(ctx, lift(ctx, value, part.dtype), part.shape)


def _replaced(ctx: Any, part: Tracer, nan: Any, posinf: Any, neginf: Any) -> Tracer:
    """part with its NaNs, +infs and -infs replaced (the three masks are disjoint)."""
    info = np.finfo(part.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = part
    masks = (apply_ufunc(np.isnan, part), _isposinf(part), _isneginf(part))
    for mask, value in zip(masks, (nan, posinf, neginf)):
        out = where(mask, _replacement(ctx, value, part), out)
    return out


def _isposinf(t: Tracer) -> Tracer:
    return apply_ufunc(np.logical_and, apply_ufunc(np.isinf, t), apply_ufunc(np.greater, t, 0))


def _isneginf(t: Tracer) -> Tracer:
    return apply_ufunc(np.logical_and, apply_ufunc(np.isinf, t), apply_ufunc(np.less, t, 0))


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """numpy.nan_to_num: NaN -> nan, +inf -> posinf (default the dtype's max), -inf -> neginf
    (default its min) in float and complex arrays; other dtypes unchanged. copy=False writes
    the result into x (a traced array) as NumPy writes into its argument."""
    ctx = context_of(x, nan, posinf, neginf)
    if ctx is None:
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    in_place = not copy
    if in_place and (not isinstance(x, Tracer) or x.weak is not None or (x.ndim == 0 and x.scalar)):
        if isinstance(x, np.ndarray):
            raise UnsupportedOperationError("numpy.nan_to_num(copy=False) of a NumPy array with traced "
                                            "replacement values: pass the array as an argument")
        # A Python or NumPy scalar (x[0], a reduction) cannot be written: NumPy's ValueError.
        np.array(x.dtype.type(0) if isinstance(x, Tracer) else x, copy=False)
    t = _asanyarray(ctx, x)
    if t.dtype.kind not in "fc":
        return t
    if t.dtype.kind == "c":
        re, im = (_replaced(ctx, lift(ctx, part(t)), nan, posinf, neginf) for part in (real, imag))
        result = ctx.bind1("make_complex", re, im)
    else:
        result = _replaced(ctx, t, nan, posinf, neginf)
    if in_place:
        t[...] = result  # noqa: B909 - NumPy's copy=False modifies x itself
        return t
    return result
