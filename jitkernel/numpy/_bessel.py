"""i0, the modified Bessel function of the first kind, order 0, as NumPy computes it
(numpy/lib/_function_base_impl.py): |x| <= 8 and |x| > 8 each take a Chebyshev series
(Clenshaw's recurrence over NumPy's own coefficient tables _i0A and _i0B, unrolled at trace
time), chosen with piecewise. Integers and bools are computed in float64, float16/32 stay
(the coefficients are Python floats: weak under NEP 50); complex input raises NumPy's
TypeError. Each series only sees arguments of its own range (numpy/_choice.py's piecewise),
so the derivative is i1(x) * sign(x) everywhere.

>>> import numpy as np, jitkernel as jk
>>> float(jk.jit(np.i0)(np.array([0.0]))[0])
1.0
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib import _function_base_impl as _fb

from ..trace.operands import context_of, lift
from ._choice import piecewise
from ._ufuncs import apply_ufunc

__all__ = ["i0"]


def _chbevl(x: Any, vals: list) -> Any:
    """NumPy's _chbevl: Clenshaw's recurrence for a Chebyshev series."""
    b0, b1, b2 = vals[0], 0.0, 0.0
    for i in range(1, len(vals)):
        b2 = b1
        b1 = b0
        b0 = apply_ufunc(np.add, apply_ufunc(np.subtract, apply_ufunc(np.multiply, x, b1), b2), vals[i])
    return apply_ufunc(np.multiply, 0.5, apply_ufunc(np.subtract, b0, b2))


def _i0_1(x: Any) -> Any:
    """exp(x) * chbevl(x/2 - 2, A) for 0 <= x <= 8."""
    return apply_ufunc(np.multiply, apply_ufunc(np.exp, x),
                       _chbevl(apply_ufunc(np.subtract, apply_ufunc(np.divide, x, 2.0), 2), _fb._i0A))


def _i0_2(x: Any) -> Any:
    """exp(x) * chbevl(32/x - 2, B) / sqrt(x) for x > 8."""
    series = _chbevl(apply_ufunc(np.subtract, apply_ufunc(np.divide, 32.0, x), 2.0), _fb._i0B)
    return apply_ufunc(np.divide, apply_ufunc(np.multiply, apply_ufunc(np.exp, x), series), apply_ufunc(np.sqrt, x))


def i0(x: Any) -> Any:
    """numpy.i0 (an ndarray, 0-d included, as NumPy's piecewise returns)."""
    ctx = context_of(x)
    if ctx is None:
        return np.i0(x)
    t = lift(ctx, x)
    t = lift(ctx, t, t.dtype) if t.weak is not None else t
    if t.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if t.dtype.kind != "f":
        t = lift(ctx, t, np.dtype(np.float64))
    t = apply_ufunc(np.absolute, t)
    return piecewise(t, [apply_ufunc(np.less_equal, t, 8.0)], [_i0_1, _i0_2])
