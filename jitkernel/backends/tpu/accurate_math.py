"""float32 logarithms, tanh and the inverse hyperbolic functions, from operations the TPU computes
exactly.

Measured on a TPU v5e (JAX 0.10.2): XLA's float32 `log`, `log1p`, `log2`, `log10`, `tanh`,
`arcsinh`, `arccosh` and `arctanh` are 1e-5 to 6e-5 relative off there (hundreds of ulp:
`np.log10(np.float32(100))` gave 1.9999847). These are written with IEEE additions, subtractions
and multiplications, comparisons, selects and integer operations on the bit patterns; division and
`sqrt` (which met the tests on the chip) appear only where their error is damped (a small
correction term, or a term at most a quarter of the result) or corrected by the exact residual
(arccosh's sqrt, arctanh's quotient); tanh's exp is computed here too.
Maximum errors over tests/test_float32_math_accuracy.py's inputs: docs/tpu.md, "Accuracy of
float32 functions on the chip".

No step depends on a product being rounded separately from a following addition (XLA's CPU
compiler may fuse them into one multiply-add, the chip may not): the products whose exact value
matters are exact by construction (12- or 16-bit halves), the others only gain from a fusion.
The chip has no subnormal floats (and XLA's CPU code treats them as zero), so subnormal inputs are
taken apart as integers, and results too small to matter are the input itself, selected.

Logarithms: x = 2**k * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)) read from the bits (a
subnormal's mantissa normalised with count-leading-zeros), f = m - 1 exact, and
log1p(f) = f + f*f*Q(f). log_b(x) = k*log_b(2) + log1p(f)*log_b(e) is summed with the large
products exact (constants split in halves of few bits, f split in 12-bit halves by masking) and
their rounding error carried (Fast2Sum), so the result is rounded about once: log2(2**k) == k and
log10(10**k) == k exactly, as the correctly rounded result is.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

# log1p(f) = f + f*f*Q(f) on [sqrt(1/2) - 1, sqrt(2) - 1]: Q of degree 9, fitted to
# (log1p(f) - f) / f**2 in float64 by Lawson's reweighted least squares on 4000 Chebyshev nodes
# (minimax relative error), the coefficients rounded to float32 one at a time from the constant
# term up with the others refitted after each rounding (scripts/fit_float32_math.py). Relative
# error of Q: 7.7e-9 (2**-26.9).
_LOG1P_Q = (-0.5, 0.33333322405815125, -0.24999991059303284, 0.2000144124031067, -0.1666843742132187,
            0.14233283698558807, -0.12407035380601883, 0.1179146096110344, -0.11626240611076355,
            0.0689544677734375)

# tanh(x) = x + x*z*T(z), z = x*x, for |x| < _TANH_POLY: T of degree 7 fitted in the same way to
# (tanh(x) - x) / x**3 on z in [0, 1]; relative error 3.0e-8 (float32's -1/3).
_TANH_POLY = 1.0
_TANH_T = (-0.3333333432674408, 0.13333411514759064, -0.05397828668355942, 0.021913649514317513,
           -0.008927474729716778, 0.003531666938215494, -0.0011529226321727037, 0.00020675863197539002)
# exp(r) = 1 + r + r*r*E(r) for |r| <= ln(2)/2 (tanh's exp), E of degree 5 fitted in the same way
# to (exp(r) - 1 - r) / r**2; relative error 3.9e-9.
_EXP_E = (0.5, 0.1666666716337204, 0.041666530072689056, 0.008333245292305946, 0.0013928738189861178,
          0.00019908770627807826)
# asinh(x) = x + x*z*S(z) and atanh(x) = x + x*z*A(z) for |x| < 1/2 (z in [0, 1/4]), degree 5 and 6;
# acosh(1 + t) = sqrt(2t) * (1 + t*C(t)) for t in [0, 1], degree 7. Fitted in the same way to
# (asinh(x) - x) / x**3, (atanh(x) - x) / x**3 and (acosh(1 + t) / sqrt(2t) - 1) / t; relative
# error 3.0e-8 each (float32's -1/6, 1/3, -1/12).
_ASINH_S = (-0.1666666716337204, 0.07500078529119492, -0.044661760330200195, 0.030496979132294655,
            -0.02203802578151226, 0.012299243360757828)
_ATANH_S = (0.3333333432674408, 0.1999969333410263, 0.14301152527332306, 0.10824812203645706,
            0.11536683887243271, -0.023768821731209755, 0.24392661452293396)
_ACOSH_C = (-0.0833333358168602, 0.018750226125121117, -0.0055837566033005714, 0.0019178981892764568,
            -0.000748420599848032, 0.00033118497231043875, -0.00013260224659461528, 2.866745307983365e-05)

# Constants as a head of few significant bits (so that k * head and f_hi * head are exact) and
# the float32 rounding of the rest.
_LN2_HI, _LN2_LO = 0.693145751953125, 1.428606765330187e-06              # ln 2: 14-bit head
_LOG10_2_HI, _LOG10_2_LO = 0.30103302001953125, -3.024355464731343e-06   # log10(2): 16-bit head
_INV_LN2_HI, _INV_LN2_LO = 1.44287109375, -0.00017605285393074155        # 1/ln 2: 12-bit head
_LOG10_E_HI, _LOG10_E_LO = 0.434326171875, -3.168997136526741e-05        # log10(e): 12-bit head
_INV_LN2, _LOG10_E = 1.4426950216293335, 0.4342944920063019              # float32 roundings

_SIGN = -0x80000000
_ABS = 0x7FFFFFFF
_INF_BITS = 0x7F800000
_MIN_NORMAL_BITS = 0x00800000
_SQRT2_MANTISSA = 0x3504F3   # float32(sqrt(2)) = 1.41421354: mantissas above it are reduced by 2
# where() takes a Python scalar as a float64 value under jax.enable_x64 (converted inside, which
# Mosaic need not take): float32 scalars
_ONE, _ZERO, _INF, _NEG_INF, _NAN = (np.float32(v) for v in (1.0, 0.0, np.inf, -np.inf, np.nan))


def _bits(x):
    return lax.bitcast_convert_type(x, jnp.int32)


def _float(i):
    return lax.bitcast_convert_type(i, jnp.float32)


def _abs_bits(x):
    return _bits(x) & _ABS


def _with_sign_of(y, x):
    """|y| with x's sign bit (y >= 0 or NaN), without a float negation."""
    return _float(_bits(y) | (_bits(x) & _SIGN))


def _below(abs_bits, bound: float):
    """|x| < bound, read from the bits (a subnormal compares as itself, not as zero)."""
    return abs_bits < int(np.float32(bound).view(np.int32))


def _split(v):
    """(head, tail) with v = head + tail exactly, head of 12 significant bits (the low mantissa bits
    masked off): products of two heads, or of a head and a tail, are exact."""
    head = _float(_bits(v) & -0x1000)
    return head, v - head


def _horner(coefficients, x):
    acc = jnp.full(x.shape, coefficients[-1], jnp.float32)
    for c in coefficients[-2::-1]:
        acc = acc * x + c
    return acc


def _decompose(x):
    """(k, f) with x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0 (subnormals
    included), k as a float32 integer and f exact. Other inputs give values the callers replace."""
    i = _abs_bits(x)
    subnormal = i < _MIN_NORMAL_BITS
    shift = jnp.where(subnormal, lax.clz(i) - 8, np.int32(0))   # brings a subnormal's leading bit to bit 23
    i = jnp.left_shift(i, shift)
    mantissa = i & 0x7FFFFF
    big = mantissa > _SQRT2_MANTISSA
    k = jnp.right_shift(i, 23) - 127 - shift + big.astype(jnp.int32)
    m = _float(mantissa | jnp.where(big, np.int32(0x3F000000), np.int32(0x3F800000)))
    return k.astype(jnp.float32), m - 1.0


def _log1p_of_reduced(f):
    """log1p(f) - f for f in [sqrt(1/2) - 1, sqrt(2) - 1]."""
    return (f * f) * _horner(_LOG1P_Q, f)


def _log_sum(k, f, c, base: str):
    """log_base(2**k * (1 + f)) + c * log_base(e), rounded about once (c: None, or a small
    correction in natural-log units)."""
    r = _log1p_of_reduced(f)
    if c is not None:
        r = r + c
    if base == "e":
        hi = k * _LN2_HI                      # exact: |k| <= 150 needs 8 bits
        w = hi + f
        carry = (hi - w) + f                  # Fast2Sum: |hi| >= |f| unless k == 0 (then exact)
        return w + (carry + (k * _LN2_LO + r))
    if base == "2":
        a_hi, a_lo, b_hi, b_lo, b = 1.0, 0.0, _INV_LN2_HI, _INV_LN2_LO, _INV_LN2
    else:
        a_hi, a_lo, b_hi, b_lo, b = _LOG10_2_HI, _LOG10_2_LO, _LOG10_E_HI, _LOG10_E_LO, _LOG10_E
    f_hi, f_lo = _split(f)
    t = f_hi * b_hi                           # exact: 12 + 12 bits
    hi = k * a_hi if a_hi != 1.0 else k       # exact
    w = hi + t
    carry = (hi - w) + t                      # Fast2Sum: |hi| >= |t| unless k == 0
    small = f_lo * b_hi + (f * b_lo + r * b)
    if a_lo:
        small = k * a_lo + small
    return w + (carry + small)


def _log_special(x, value):
    """NumPy's log of 0 (-inf, either sign), of x < 0 and NaN (nan) and of inf (inf); `value`
    elsewhere."""
    i = _bits(x)
    finite_positive = (i > 0) & (i < _INF_BITS)
    out = jnp.where(finite_positive, value, _NAN)
    out = jnp.where((i & _ABS) == 0, _NEG_INF, out)
    return jnp.where(i == _INF_BITS, _INF, out)


def _log_base(x, base: str):
    k, f = _decompose(x)
    return _log_special(x, _log_sum(k, f, None, base))


def log(x):
    return _log_base(x, "e")


def log2(x):
    return _log_base(x, "2")


def log10(x):
    return _log_base(x, "10")


_LOW = 0.7071067690849304 - 1.0     # float32(sqrt(1/2)) - 1: below it 1 + x is reduced
_HIGH = 1.4142135381698608 - 1.0    # float32(sqrt(2)) - 1


def _log1p_parts(y, y_lo=0.0):
    """(k, f, c) with log1p(y + y_lo) = log(2**k * (1 + f)) + c for finite y > -1 (y_lo: a small
    correction): y itself where it is in the reduced range, else u = 1 + y taken apart and
    c = (d + y_lo) / u, d = (1 - u) + y the rounding error of u (exact for every y > -1: each
    subtraction is exact by Sterbenz's lemma or gives -y). Not y - (u - 1): XLA's simplifier
    rewrites (y + 1) - 1 into y (measured: d came out 0)."""
    in_range = (y >= _LOW) & (y < _HIGH)
    u = 1.0 + y
    k, f = _decompose(u)
    c = (jnp.where(in_range, _ZERO, (1.0 - u) + y) + y_lo) / u
    return jnp.where(in_range, _ZERO, k), jnp.where(in_range, y, f), c


def log1p(x):
    k, f, c = _log1p_parts(x)
    value = _log_sum(k, f, c, "e")
    i = _bits(x)
    value = jnp.where(_below(i & _ABS, 2.0 ** -26), x, value)   # x - x*x/2 rounds to x; keeps -0.0
    out = jnp.where(x > -1.0, value, _NAN)
    out = jnp.where(x == -1.0, _NEG_INF, out)
    return jnp.where(i == _INF_BITS, _INF, out)


def _odd(x, z, coefficients):
    """x + x**3 * S(x**2), z = x*x: an odd function whose series starts with x."""
    return x + x * (z * _horner(coefficients, z))


def _exp(y):
    """exp(y) for y in [0, 64]: 2**n * exp(r), n = round(y / ln 2), r = y - n*ln 2 (n * _LN2_HI
    exact and its subtraction exact by Sterbenz's lemma), 2**n added to the exponent bits."""
    n = jnp.round(y * _INV_LN2)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 + (r + (r * r) * _horner(_EXP_E, r))
    return _float(_bits(p) + jnp.left_shift(n.astype(jnp.int32), 23))


def tanh(x):
    """x + x**3 * T(x**2) for |x| < 1, 1 - 2 / (exp(2|x|) + 1) beyond, with exp computed here (the
    chip's exp is not needed: its error would reach the result shrunk only by 2 / (exp(2|x|) + 1),
    0.24 at |x| = 1). tanh is 1 in float32 from |x| = 9.01: 2|x| is capped at 64."""
    i = _abs_bits(x)
    a = _float(i)
    far = 1.0 - 2.0 / (_exp(jnp.minimum(a + a, 64.0)) + 1.0)
    out = jnp.where(a < _TANH_POLY, _odd(x, x * x, _TANH_T), _with_sign_of(far, x))
    out = jnp.where(i > _INF_BITS, x, out)           # NaN
    return jnp.where(_below(i, 2.0 ** -12), x, out)   # tanh x = x in float32 (and -0.0, subnormals)


def _log_parts(y, y_lo, bump):
    """(k, f, c) with log(y + y_lo) + bump * ln 2 = log(2**k * (1 + f)) + c, for finite y > 0."""
    k, f = _decompose(y)
    return k + bump, f, y_lo / y


def arcsinh(x):
    """sign(x) * asinh(a), a = |x|: a + a**3 * S(a*a) below 1/2; log1p(a + a*a / (1 + sqrt(1 + a*a)))
    up to 2; log(2a + 1 / (a + sqrt(a*a + 1))) up to 2**12; log(a) + ln 2 beyond (a*a would
    overflow). The logarithm's argument is carried as a sum y + y_lo (Fast2Sum)."""
    i = _abs_bits(x)
    a = _float(i)
    z = a * a
    root = jnp.sqrt(z + 1.0)
    mid = a <= 2.0
    huge = a > 2.0 ** 12
    s = jnp.where(mid, z / (1.0 + root), 1.0 / (root + a))
    lead = jnp.where(mid, a, a + a)
    y = lead + s
    y_lo = (lead - y) + s                     # Fast2Sum: lead >= s
    near = _log1p_parts(y, y_lo)
    far = _log_parts(jnp.where(huge, a, y), jnp.where(huge, _ZERO, y_lo), jnp.where(huge, _ONE, _ZERO))
    value = _log_sum(*(jnp.where(mid, p, q) for p, q in zip(near, far)), "e")
    value = jnp.where(a < 0.5, _odd(a, z, _ASINH_S), value)
    value = jnp.where(i >= _INF_BITS, a, value)               # inf and NaN
    return jnp.where(_below(i, 2.0 ** -12), x, _with_sign_of(value, x))


def arccosh(x):
    """sqrt(2t) * (1 + t * C(t)) for t = x - 1 in [0, 1] (sqrt(2t) corrected by its residual, so
    the result does not carry the rounding of sqrt); log(2x - 1 / (x + sqrt(x*x - 1))) up to
    2**12; log(x) + ln 2 beyond; nan below 1."""
    t = x - 1.0                               # exact up to x = 2
    two_t = t + t
    s = jnp.sqrt(two_t)
    s_hi, s_lo = _split(s)                    # 2t - s*s, its first subtraction exact (Sterbenz)
    residual = ((two_t - s_hi * s_hi) - (s_hi + s_hi) * s_lo) - s_lo * s_lo
    s_fix = jnp.where(t > 0.0, residual / (s + s), _ZERO)
    near = s + (s_fix + s * (t * _horner(_ACOSH_C, t)))
    huge = x > 2.0 ** 12
    w = 1.0 / (x + jnp.sqrt(x * x - 1.0))
    y = (x + x) - w
    y_lo = ((x + x) - y) - w                  # Fast2Sum: 2x >= w
    parts = _log_parts(jnp.where(huge, x, y), jnp.where(huge, _ZERO, y_lo), jnp.where(huge, _ONE, _ZERO))
    value = _log_sum(*parts, "e")
    value = jnp.where(x <= 2.0, near, value)
    value = jnp.where(x >= 1.0, value, _NAN)              # and NaN
    return jnp.where(x == _INF, _INF, value)


def arctanh(x):
    """sign(x) * atanh(a), a = |x|: a + a**3 * A(a*a) below 1/2; log1p(2a / (1 - a)) / 2 from 1/2
    (1 - a exact there, the quotient carried with its residual); +-inf at +-1, nan beyond."""
    i = _abs_bits(x)
    a = _float(i)
    t = a + a
    d = 1.0 - a
    q = t / d
    (q_hi, q_lo), (d_hi, d_lo) = _split(q), _split(d)
    residual = (((t - q_hi * d_hi) - q_hi * d_lo) - q_lo * d_hi) - q_lo * d_lo   # t - q*d
    k, f, c = _log1p_parts(q, residual / d)
    value = 0.5 * _log_sum(k, f, c, "e")
    value = jnp.where(a < 0.5, _odd(a, a * a, _ATANH_S), value)
    value = jnp.where(a < 1.0, value, jnp.where(a == 1.0, _INF, _NAN))
    return jnp.where(_below(i, 2.0 ** -12), x, _with_sign_of(value, x))


FUNCTIONS = {"log": log, "log1p": log1p, "log2": log2, "log10": log10, "tanh": tanh,
             "arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh}
