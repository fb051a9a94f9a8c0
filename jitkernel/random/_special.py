"""erf and erfinv on float Tracers, from elementary operations, for the
samplers (normal, truncated_normal). They follow the approximations XLA uses for JAX's
`lax.erf_inv` / `lax.erf` (so normal agrees with JAX within a few ulp):

- erfinv: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the
  single-precision polynomials (two branches) for float32, the double-precision ones (three
  branches) for float64.
- erf: float32, Eigen's rational approximation (fused multiply-adds, +-1 from |x| >= 3.8325), as
  XLA's CPU and GPU code; float64, the Cephes rational approximations (erf for |x| < 1,
  1 - erfc otherwise; XLA calls the C library's erf, so float64 results may differ by an ulp
  or a few).

next_up (nextafter(x, +inf)) is numpy.nextafter's, from jitkernel/numpy/_ufuncs_float.py.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..numpy._ufuncs_float import next_up as next_up  # noqa: F401 - the samplers' import
from ..trace.tracer import Tracer
from ..transforms import ops

# Giles' erfinv coefficients, highest degree first.
_ERFINV32_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV32_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_ERFINV64_W_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_W_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_W_GE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)

# erf, float32: x * P(x^2) / Q(x^2) on the clamped range.
_ERF32_P = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861, 0.18520832239976145,
            1.128379143519084)
_ERF32_Q = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885, 0.014070470171167667,
            0.11098505178285362, 0.49746925110067538, 1.0)
_ERF32_CLAMP = 3.832506856900711  # erf is +-1 in float32 from here on
# erf / erfc, float64 (Cephes ndtr.c).
_ERF64_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
            7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF64_U = (1.00000000000000000000E0, 3.35617141647503099647E1, 5.21357949780152679795E2,
            4.59432382970980127987E3, 2.26290000613890934246E4, 4.92673942608635921086E4)
_ERFC64_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
             4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
             9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC64_Q = (1.00000000000000000000E0, 1.32281951154744992508E1, 8.67072140885989742329E1,
             3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
             2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC64_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
             6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC64_S = (1.00000000000000000000E0, 2.26052863220117276590E0, 9.39603524938001434673E0,
             1.20489539808096656605E1, 1.70814450747565897222E1, 9.60896809063285878198E0,
             3.36907645100081516050E0)
_MAXLOG64 = 7.09782712893383996843E2


def _c(value: float, dtype: np.dtype) -> np.ndarray:
    return np.asarray(value, dtype=dtype)


def fma(a: Tracer, b: Tracer, c: Any) -> Tracer:
    """a * b + c rounded once, broadcast together. XLA's CPU and GPU backends contract a
    multiply feeding an add into one fused multiply-add; JAX's numbers depend on it."""
    dtype = a.dtype
    shape = np.broadcast_shapes(tuple(a.shape), tuple(np.shape(b)), tuple(np.shape(c)))
    args = [x if isinstance(x, Tracer) else ops.const(np.asarray(x, dtype), dtype) for x in (a, b, c)]
    args = [ops.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape)))) for x in args]
    return ops.bind1("fma", *args)


def _horner(x: Tracer, coefficients: Sequence[float]) -> Tracer:
    """sum(c[i] * x**(n-1-i)): highest degree first, one fused multiply-add per coefficient."""
    dtype = x.dtype
    p = None
    for c in coefficients:
        p = _c(c, dtype) if p is None else fma(p, x, _c(c, dtype))
    return p


# XLA's log1p for |x| < sqrt(2) - 1: Cephes' rational approximation (numerator and denominator
# highest degree first). JAX's numbers go through it, and it is not the C library's log1p: up
# to 128 ulp apart in float64 near x = -0.41, which moved normal samples by up to 30 ulp.
_LOG1P_NUM = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
              2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
              2.0039553499201281259648e1)
_LOG1P_DEN = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
              3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)
_LOG1P_SMALL = 0.41421356237309504880  # sqrt(2) - 1


def log1p_as_xla(x: Tracer) -> Tracer:
    """log(1 + x) computed as XLA's CPU code computes it (its elemental emitter): for |x| below
    sqrt(2) - 1, x - x^2/2 + x^3 P(x)/Q(x) with fused multiply-adds; elsewhere log(1 + x).
    Measured against JAX 0.10.2 on the CPU over 200,000 points of (-1, 0]: bit for bit in the
    rational branch (float32 and float64); log(1 + x) differs by at most an ulp (float64) or
    two (float32: XLA's own logf), where XLA does not call the C library."""
    dtype = x.dtype
    x2 = x * x
    ratio = _horner(x, _LOG1P_NUM) / _horner(x, _LOG1P_DEN)
    small = x + fma(x2, _c(-0.5, dtype), (x * x2) * ratio)  # -x^2/2 + x^3 P/Q, rounded once
    return np.where(np.abs(x) < _c(_LOG1P_SMALL, dtype), small, np.log(x + _c(1.0, dtype)))


def erfinv(x: Tracer) -> Tracer:
    """The inverse error function (float32 or float64); +-1 -> +-inf (as the largest float times x)."""
    dtype = x.dtype
    w = -log1p_as_xla(-x * x)
    if dtype == np.float32:
        small = w < _c(5.0, dtype)
        p_small = _horner(w - _c(2.5, dtype), _ERFINV32_W_LT_5)
        p_large = _horner(np.sqrt(w) - _c(3.0, dtype), _ERFINV32_W_GE_5)
        p = np.where(small, p_small, p_large)
    else:
        lt_6_25 = w < _c(6.25, dtype)
        lt_16 = w < _c(16.0, dtype)
        sqrt_w = np.sqrt(w)
        p_a = _horner(w - _c(3.125, dtype), _ERFINV64_W_LT_6_25)
        p_b = _horner(sqrt_w - _c(3.25, dtype), _ERFINV64_W_LT_16)
        p_c = _horner(sqrt_w - _c(5.0, dtype), _ERFINV64_W_GE_16)
        p = np.where(lt_6_25, p_a, np.where(lt_16, p_b, p_c))
    result = p * x
    return np.where(np.abs(x) == _c(1.0, dtype), x * _c(np.finfo(dtype).max, dtype), result)


def erf(x: Tracer) -> Tracer:
    """The error function (float32 or float64)."""
    dtype = x.dtype
    if dtype == np.float32:
        x2 = x * x
        ratio = (x * _horner(x2, _ERF32_P)) / _horner(x2, _ERF32_Q)
        return np.where(np.abs(x) >= _c(_ERF32_CLAMP, dtype), np.copysign(_c(1.0, dtype), x), ratio)
    one = _c(1.0, dtype)
    ax = np.abs(x)
    z = x * x
    small = x * _horner(z, _ERF64_T) / _horner(z, _ERF64_U)
    # erfc for |x| >= 1
    e = np.exp(-z)
    y = np.where(ax < _c(8.0, dtype), e * _horner(ax, _ERFC64_P) / _horner(ax, _ERFC64_Q),
                 e * _horner(ax, _ERFC64_R) / _horner(ax, _ERFC64_S))
    y = np.where(-z < _c(-_MAXLOG64, dtype), _c(0.0, dtype), y)
    erfc = np.where(x < _c(0.0, dtype), _c(2.0, dtype) - y, y)
    return np.where(ax < one, small, one - erfc)
