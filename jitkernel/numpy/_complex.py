"""NumPy's complex-number functions for traced arrays: real, imag, conj/conjugate, angle and the
type tests (docs/numpy-support.md "Complex numbers"). Arithmetic, comparisons, exp/log/trig and
the rest are the ordinary ufuncs, whose complex loops NumPy resolves (numpy/_ufuncs.py).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda z: (np.real(z), np.angle(z)))(np.array([1j, -1 + 0j]))
(array([ 0., -1.]), array([1.57079633, 3.14159265]))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.primitives import ufunc_loop
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, dtype_key, lift, WEAK_DEFAULT, unsupported_kwargs
from ._ufuncs import apply_ufunc

__all__ = ["real", "imag", "conj", "conjugate", "angle", "iscomplexobj", "isrealobj", "iscomplex", "isreal"]


def _traced(x: Any) -> Tracer | None:
    ctx = context_of(x)
    return None if ctx is None else lift(ctx, x)


def real(val: Any) -> Any:
    """numpy.real: the real part (float32 of complex64); a real array is returned as it is."""
    t = _traced(val)
    if t is None:
        return np.real(val)
    if t.dtype.kind != "c":
        return t
    return t._ctx.bind1("real", t)


def imag(val: Any) -> Any:
    """numpy.imag: the imaginary part; zeros of the array's dtype for a real array."""
    t = _traced(val)
    if t is None:
        return np.imag(val)
    if t.dtype.kind != "c":
        return broadcast_to_shape(t._ctx, t._ctx.const(np.zeros((), t.dtype)), t.shape)
    return t._ctx.bind1("imag", t)


def conjugate(x: Any, **kwargs: Any) -> Any:
    """numpy.conjugate / numpy.conj: negates the imaginary part; a real array is copied in the
    dtype of NumPy's loop (the identity)."""
    unsupported_kwargs("conjugate", kwargs, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True)
    ctx = context_of(x)
    if ctx is None:
        return np.conjugate(x)
    key = dtype_key(x)
    loop_dt = ufunc_loop(np.conjugate, [WEAK_DEFAULT[key] if isinstance(key, type) else key])[1][0]
    if loop_dt.kind == "c":
        return apply_ufunc(np.conjugate, x)
    t = lift(ctx, x, loop_dt)
    return ctx.bind1("convert", t, dtype=loop_dt)  # a new array, as the ufunc returns


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """numpy.angle: arctan2(imag, real), as NumPy computes it (arctan2(0, x) for real x)."""
    t = _traced(z)
    if t is None:
        return np.angle(z, deg)
    if t.dtype.kind == "c":
        a = apply_ufunc(np.arctan2, imag(t), real(t))
    else:
        a = apply_ufunc(np.arctan2, 0, t)
    if deg:
        a = lift(t._ctx, apply_ufunc(np.multiply, a, 180 / np.pi), a.dtype)
    return a


def iscomplexobj(x: Any) -> bool:
    """numpy.iscomplexobj: whether the dtype is complex (known at trace time)."""
    if isinstance(x, Tracer):
        return x.weak is complex or x.dtype.kind == "c"
    return np.iscomplexobj(x)


def isrealobj(x: Any) -> bool:
    """numpy.isrealobj: not iscomplexobj."""
    return not iscomplexobj(x)


def iscomplex(x: Any) -> Any:
    """numpy.iscomplex: imag(x) != 0 elementwise (all False for a real array)."""
    t = _traced(x)
    if t is None:
        return np.iscomplex(x)
    return apply_ufunc(np.not_equal, imag(t), 0)


def isreal(x: Any) -> Any:
    """numpy.isreal: imag(x) == 0 elementwise (all True for a real array)."""
    t = _traced(x)
    if t is None:
        return np.isreal(x)
    return apply_ufunc(np.equal, imag(t), 0)
