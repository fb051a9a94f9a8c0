"""Floating-point ufuncs written over other primitives: fabs, modf, frexp, ldexp, nextafter,
spacing, deg2rad / radians, rad2deg / degrees, heaviside, float_power, logaddexp, logaddexp2.

The IR has no bit casts, so the bit-exact ones (frexp, ldexp, nextafter, spacing) work on
exact arithmetic alone: multiplying by a power of two is exact while the result stays
representable, and so is the quotient of two numbers whose ratio is a power of two. A float's
exponent is found by scaling it into [0.5, 1) with comparisons against fixed powers of two
(`_frexp_parts`), never with log2 / exp2, whose accuracy is the backend's libm's. Derivatives
are described in docs/ufuncs.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.tracer import Tracer
from ._ufuncs import apply_ufunc, composed_ufunc, ufunc_operands
from ..transforms.ad import stop_gradient
from ..transforms.custom import custom_jvp

__all__ = ["fabs", "modf", "frexp", "ldexp", "nextafter", "spacing", "deg2rad", "radians", "rad2deg",
           "degrees", "heaviside", "float_power", "logaddexp", "logaddexp2"]

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def _c(value: Any, dtype: np.dtype) -> np.ndarray:
    """A strong 0-d constant of `dtype` (never a weak Python scalar, so it cannot widen)."""
    return np.asarray(value, dtype=dtype)


def _halvings(dtype: np.dtype) -> list[int]:
    """The exponent steps 2**j, largest first, whose powers of two 2**(2**j) are finite in
    `dtype` and whose sum is the largest finite exponent (1023 for float64: 512 + ... + 1)."""
    top = (int(np.finfo(dtype).maxexp) - 1).bit_length()
    return [1 << j for j in reversed(range(top))]


def _custom_jvp_ok(*ts: Tracer) -> bool:
    """Operands of data-dependent size take the plain composition, as select_by_exponent in
    _ufuncs.py does: jitkernel refuses to differentiate them, so no derivative comes from it."""
    return not any(isinstance(t, Tracer) and t.aval.is_symbolic for t in ts)


# ----------------------------------------------------------------------------- exponents

def _frexp_parts(ax: Tracer) -> tuple[Tracer, Tracer]:
    """(m, e) with ax == m * 2**e, m in [0.5, 1) and e int32, for a finite positive `ax` (other
    values give meaningless results the callers select away). Every step multiplies by a power
    of two and keeps the value normal, so it is exact: subnormals are first scaled up by
    2**(nmant + 1), then halvings by 2**512, ..., 2**1 bring large values below 2 and small ones
    to 0.5 or more; a last halving puts [1, 2) into [0.5, 1)."""
    dtype = ax.dtype
    info = np.finfo(dtype)
    i32 = np.dtype(np.int32)
    up = int(info.nmant) + 1
    sub = ax < _c(info.smallest_normal, dtype)
    m = np.where(sub, ax * _c(2.0 ** up, dtype), ax)
    e = np.where(sub, _c(-up, i32), _c(0, i32))
    for k in _halvings(dtype):
        big = m >= _c(2.0 ** k, dtype)
        m = np.where(big, m * _c(2.0 ** -k, dtype), m)
        e = np.where(big, e + _c(k, i32), e)
    for k in _halvings(dtype):
        small = m < _c(2.0 ** -k, dtype)
        m = np.where(small, m * _c(2.0 ** k, dtype), m)
        e = np.where(small, e - _c(k, i32), e)
    top = m >= _c(1.0, dtype)
    return np.where(top, m * _c(0.5, dtype), m), np.where(top, e + _c(1, i32), e)


def _pow2(k: Tracer, dtype: np.dtype) -> Tracer:
    """2.0 ** k in `dtype` for an integer `k` with |k| <= the largest finite exponent, exactly:
    a product of the powers 2**(2**j) for the bits of |k| (all partial products are powers of
    two between 1 and the result), inverted for negative k (1 / 2**k is exact)."""
    a = np.abs(k)
    p = None
    for j, step in enumerate(reversed(_halvings(dtype))):
        bit = np.bitwise_and(np.right_shift(a, _c(j, k.dtype)), _c(1, k.dtype)) == _c(1, k.dtype)
        factor = np.where(bit, _c(2.0 ** step, dtype), _c(1.0, dtype))
        p = factor if p is None else p * factor
    return np.where(k < _c(0, k.dtype), _c(1.0, dtype) / p, p)


def _ulp_of(ax: Tracer) -> tuple[Tracer, Tracer]:
    """(ulp, m) for finite positive `ax`: the spacing of ax's binade (the smallest subnormal
    below the normal range) and ax's frexp mantissa. 2**(e-1) is ax / (2 m), an exact quotient."""
    dtype = ax.dtype
    info = np.finfo(dtype)
    m, _ = _frexp_parts(ax)
    binade = ax / (m * _c(2.0, dtype))
    ulp = np.maximum(binade * _c(2.0 ** -int(info.nmant), dtype), _c(info.smallest_subnormal, dtype))
    return ulp, m


def _next_away(x: Tracer, toward_larger_magnitude: Tracer) -> Tracer:
    """nextafter of a float Tracer x in one direction per element: away from zero where
    `toward_larger_magnitude`, else toward zero. Below a power of two the spacing halves (not
    below the smallest normal); 0 moves to the smallest subnormal of y's sign (caller), an
    infinity toward zero becomes the largest finite."""
    dtype = x.dtype
    info = np.finfo(dtype)
    ax = np.abs(x)
    ulp, m = _ulp_of(ax)
    at_power = (m == _c(0.5, dtype)) & (ax > _c(info.smallest_normal, dtype))
    down = np.where(at_power, ulp * _c(0.5, dtype), ulp)
    mag = np.where(toward_larger_magnitude, ax + ulp, ax - down)
    mag = np.where(np.isinf(x), _c(info.max, dtype), mag)  # only moved toward zero (caller)
    return np.copysign(mag, x)


def next_up(x: Tracer) -> Tracer:
    """`np.nextafter(x, +inf)` for a float Tracer (the samplers in jitkernel.random use it)."""
    dtype = x.dtype
    info = np.finfo(dtype)
    y = _next_away(x, x > _c(0.0, dtype))
    y = np.where(x == _c(0.0, dtype), _c(info.smallest_subnormal, dtype), y)
    return np.where(x == _c(np.inf, dtype), x, y)


# ----------------------------------------------------------------------------- exact ufuncs

@composed_ufunc
def fabs(x: Any) -> Any:
    """numpy.fabs: |x| in NumPy's float loop (integers and bools take float16/32/64 as NumPy)."""
    (t,), _ = ufunc_operands(np.fabs, x)
    return apply_ufunc(np.absolute, t)


@composed_ufunc
def modf(x: Any) -> Any:
    """numpy.modf: (fractional part, integral part), both with x's sign. The fractional part of a
    negative x is computed as -(|x| - trunc|x|), which carries -0.0 for negative integers as
    NumPy does and keeps the derivative 1 (no copysign, whose derivative is 0 at a zero)."""
    (t,), _ = ufunc_operands(np.modf, x)
    dtype = t.dtype
    whole = np.trunc(t)
    neg = -t
    frac = np.where(np.signbit(t), -(neg - np.trunc(neg)), t - whole)
    frac = np.where(np.isinf(t), np.copysign(_c(0.0, dtype), t), frac)
    return frac, whole


@composed_ufunc
def frexp(x: Any) -> Any:
    """numpy.frexp: (mantissa in [0.5, 1) with x's sign, int32 exponent); 0, inf and nan give
    (x, 0)."""
    (t,), _ = ufunc_operands(np.frexp, x)
    m, e = _frexp_parts(np.abs(t))
    special = (t == _c(0.0, t.dtype)) | ~np.isfinite(t)
    mantissa = np.where(special, t, np.copysign(m, t))
    return mantissa, np.where(special, _c(0, np.int32), e)


@composed_ufunc
def ldexp(x1: Any, x2: Any) -> Any:
    """numpy.ldexp: x1 * 2**x2 rounded once (NumPy's loops 'ei', 'fi', 'di', 'el', 'fl', 'dl';
    float16 is float32's ldexp rounded to half, as NumPy computes it)."""
    (t, n), _ = ufunc_operands(np.ldexp, x1, x2)
    if not _custom_jvp_ok(t, n):
        return _ldexp(t, n)
    f = custom_jvp(_ldexp)
    f.__name__ = "ldexp"

    def rule(primals: tuple, tangents: tuple) -> tuple:
        # ldexp is linear in x1: d/dx1 = 2**x2 everywhere (0 and inf included); x2 is an
        # integer and has no tangent.
        (a, k), (ta, _) = primals, tangents
        return f(a, k), _ldexp(ta, k)

    f.defjvp(rule)
    return f(t, n)


def _ldexp(t: Tracer, n: Tracer) -> Tracer:
    if t.dtype == _F16:
        return _ldexp(t.astype(_F32), n).astype(_F16)
    return _scalbn(t, n)


def _scalbn(y: Tracer, n: Tracer) -> Tracer:
    """musl's scalbn / scalbnf: at most two exact scalings bring n into the normal exponent
    range, then one multiply by 2**n rounds once. Scaling down uses 2**(minexp + nmant + 1)
    instead of 2**minexp so that a result bound for the subnormal range is not rounded twice."""
    dtype = y.dtype
    info = np.finfo(dtype)
    hi = int(info.maxexp) - 1                        # 1023
    lo = int(info.minexp)                            # -1022
    down = lo + int(info.nmant) + 1                  # -969: stays normal, leaves room below
    idt = n.dtype
    for _ in range(2):
        over, under = n > _c(hi, idt), n < _c(lo, idt)
        y = np.where(over, y * _c(2.0 ** hi, dtype), np.where(under, y * _c(2.0 ** down, dtype), y))
        n = np.where(over, n - _c(hi, idt), np.where(under, n - _c(down, idt), n))
    n = np.clip(n, _c(lo, idt), _c(hi, idt))
    return y * _pow2(n, dtype)


@composed_ufunc
def nextafter(x1: Any, x2: Any) -> Any:
    """numpy.nextafter: the next float after x1 toward x2 (x2 when they are equal, x1 for
    float16 as NumPy's half loop; nan when either is nan). Its derivative is 1 in x1, 0 in x2 (custom_jvp, see docs/ufuncs.md)."""
    (a, b), _ = ufunc_operands(np.nextafter, x1, x2)
    if not _custom_jvp_ok(a, b):
        return _nextafter(a, b)
    f = custom_jvp(_nextafter)
    f.__name__ = "nextafter"
    f.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
    return f(a, b)


def _nextafter(a: Tracer, b: Tracer) -> Tracer:
    dtype = a.dtype
    info = np.finfo(dtype)
    zero = _c(0.0, dtype)
    away = (b > a) == (a > zero)
    y = _next_away(a, away)
    tiny = _c(info.smallest_subnormal, dtype)
    y = np.where(a == zero, np.where(b > zero, tiny, -tiny), y)
    # Equal operands (0.0 and -0.0 too): C's nextafter returns y; NumPy's float16 loop
    # (npy_half_nextafter) returns x.
    y = np.where(a == b, a if dtype == _F16 else b, y)
    return np.where(np.isnan(a) | np.isnan(b), a + b, y)


@composed_ufunc
def spacing(x: Any) -> Any:
    """numpy.spacing: nextafter(x, copysign(inf, x)) - x for float32 / float64 (negative for
    negative x, +-inf at the largest finite, the smallest subnormal at both zeros, nan at inf
    and nan). NumPy's float16 loop (npy_half_spacing) differs: it is nextafter(x, +inf) - x,
    never negative (spacing(-1) is the spacing below 1, spacing(-max) is finite); copied.
    Piecewise constant: its derivative is 0."""
    (t,), _ = ufunc_operands(np.spacing, x)
    t = stop_gradient(t)
    dtype = t.dtype
    info = np.finfo(dtype)
    if dtype == _F16:
        s = next_up(t) - t
    else:
        ulp, _ = _ulp_of(np.abs(t))
        s = np.copysign(ulp, t)
        s = np.where(np.abs(t) == _c(info.max, dtype), np.copysign(_c(np.inf, dtype), t), s)
        s = np.where(t == _c(0.0, dtype), _c(info.smallest_subnormal, dtype), s)
    return np.where(np.isfinite(t), s, _c(np.nan, dtype))


# ----------------------------------------------------------------------------- angles, steps

def _scale_by_constant(ufunc: np.ufunc, x: Any) -> Tracer:
    """x times NumPy's own constant for `ufunc` in the loop's precision (float16 is computed in
    float32 and rounded, as NumPy does): the constant is ufunc(dtype(1))."""
    (t,), _ = ufunc_operands(ufunc, x)
    work = _F32 if t.dtype == _F16 else t.dtype
    constant = ufunc(np.ones((), work))
    r = apply_ufunc(np.multiply, t.astype(work) if work != t.dtype else t, _c(constant, work))
    return r.astype(t.dtype) if work != t.dtype else r


@composed_ufunc
def deg2rad(x: Any) -> Any:
    """numpy.deg2rad: x * (pi / 180) in the loop's precision."""
    return _scale_by_constant(np.deg2rad, x)


@composed_ufunc
def radians(x: Any) -> Any:
    """numpy.radians: x * (pi / 180) in the loop's precision."""
    return _scale_by_constant(np.radians, x)


@composed_ufunc
def rad2deg(x: Any) -> Any:
    """numpy.rad2deg: x * (180 / pi) in the loop's precision."""
    return _scale_by_constant(np.rad2deg, x)


@composed_ufunc
def degrees(x: Any) -> Any:
    """numpy.degrees: x * (180 / pi) in the loop's precision."""
    return _scale_by_constant(np.degrees, x)


@composed_ufunc
def heaviside(x1: Any, x2: Any) -> Any:
    """numpy.heaviside: nan where x1 is nan, x2 where x1 == 0, 0 below, 1 above."""
    (a, b), _ = ufunc_operands(np.heaviside, x1, x2)
    dtype = a.dtype
    step = np.where(a < _c(0.0, dtype), _c(0.0, dtype), _c(1.0, dtype))
    return np.where(np.isnan(a), a, np.where(a == _c(0.0, dtype), b, step))


@composed_ufunc
def float_power(x1: Any, x2: Any) -> Any:
    """numpy.float_power: pow in float64 or complex128, element by element (NumPy's float_power
    loop has none of power's fast paths, so neither has this)."""
    (a, b), _ = ufunc_operands(np.float_power, x1, x2)
    return apply_ufunc(np.power, a, b)


# ----------------------------------------------------------------------------- logaddexp

_LN2 = float(np.log(2.0))
_LOG2E = 1.0 / _LN2


@composed_ufunc
def logaddexp(x1: Any, x2: Any) -> Any:
    """numpy.logaddexp: log(exp(x1) + exp(x2)) as NumPy's npy_logaddexp computes it."""
    return _logaddexp_family(np.logaddexp, x1, x2)


@composed_ufunc
def logaddexp2(x1: Any, x2: Any) -> Any:
    """numpy.logaddexp2: log2(2**x1 + 2**x2) as NumPy's npy_logaddexp2 computes it."""
    return _logaddexp_family(np.logaddexp2, x1, x2)


def _logaddexp_family(ufunc: np.ufunc, x1: Any, x2: Any) -> Tracer:
    """The operands in NumPy's loop (float16 computed in float32 and rounded), the value by
    NumPy's formula and, where shapes are concrete, the derivative by a custom_jvp: the
    formula's tie select would give (1, 0) at x1 == x2, the math gives (1/2, 1/2)."""
    (a, b), _ = ufunc_operands(ufunc, x1, x2)
    half = a.dtype == _F16
    if half:
        a, b = a.astype(_F32), b.astype(_F32)
    base2 = ufunc is np.logaddexp2
    value = (lambda p, q: _logaddexp2(p, q)) if base2 else (lambda p, q: _logaddexp(p, q))
    if _custom_jvp_ok(a, b):
        f = custom_jvp(value)
        f.__name__ = ufunc.__name__

        def rule(primals: tuple, tangents: tuple) -> tuple:
            (p, q), (tp, tq) = primals, tangents
            wp, wq = _logaddexp_weights(p, q, base2)
            return f(p, q), tp * wp + tq * wq

        f.defjvp(rule)
        out = f(a, b)
    else:
        out = value(a, b)
    return out.astype(_F16) if half else out


def _logaddexp(x: Tracer, y: Tracer) -> Tracer:
    """npy_logaddexp: x == y -> x + log(2) (equal infinities too), else
    max + log1p(exp(-|x - y|)); nan propagates through max."""
    dtype = x.dtype
    r = np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y)))
    return np.where(x == y, x + _c(_LN2, dtype), r)


def _logaddexp2(x: Tracer, y: Tracer) -> Tracer:
    """npy_logaddexp2: x == y -> x + 1, else max + LOG2E * log1p(exp2(-|x - y|))."""
    dtype = x.dtype
    r = np.maximum(x, y) + _c(_LOG2E, dtype) * np.log1p(np.exp2(-np.abs(x - y)))
    return np.where(x == y, x + _c(1.0, dtype), r)


def _logaddexp_weights(x: Tracer, y: Tracer, base2: bool) -> tuple[Tracer, Tracer]:
    """d/dx and d/dy of logaddexp(x, y): sigmoid(x - y) and sigmoid(y - x) (base 2: the
    logistic of (x - y) ln 2), 1/2 each at ties (equal infinities included); an infinity
    against a finite value takes the whole derivative, nan stays nan."""
    dtype = x.dtype
    one = _c(1.0, dtype)
    grow = np.exp2 if base2 else np.exp
    d = x - y
    wx = one / (one + grow(-d))
    wy = one / (one + grow(d))
    # Equal infinities (x - y is nan) split evenly. A finite tie needs no select: the logistic is
    # 1/2 there, and its own derivative (a Hessian at the tie: 1/4) stays the math's.
    tie = (x == y) & np.isinf(x)
    return np.where(tie, _c(0.5, dtype), wx), np.where(tie, _c(0.5, dtype), wy)
