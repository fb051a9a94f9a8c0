"""isclose, allclose, array_equal and array_equiv: NumPy's comparisons of whole arrays, traced.

Each follows NumPy 2.4's own code (numpy/_core/numeric.py) with the traced ufuncs, so dtypes,
NaN and infinity handling are NumPy's:

- isclose: `(|x - y| <= atol + rtol*|y|) & isfinite(y) | (x == y)`, y made inexact first
  (result_type(y, 1.0)); equal_nan adds `isnan(x) & isnan(y)`. A 0-d result is a scalar.
- allclose, array_equal, array_equiv: NumPy returns a Python bool. Inside jit the answer is
  a traced bool scalar (np.bool_ once returned from the jitted function). An `if` on it in
  the jitted function's own code is converted to a traced conditional; `bool(...)` and an
  `if` in code that is not converted raise TracerBoolConversionError (its value is not known
  while tracing): use np.where or jk.lax.cond there, or return it. What the shapes alone decide (array_equal of
  different shapes, array_equiv of shapes that do not broadcast) is a constant False.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a, b: np.allclose(a, b))(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
np.True_
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import context_of, lift, shape_of, weak_type, result_type
from ..trace.tracer import Tracer
from ._reductions import all as _all
from ._ufuncs import apply_ufunc
from ._creation import asarray

__all__ = ["isclose", "allclose", "array_equal", "array_equiv"]


def _operand(ctx: Any, x: Any) -> Any:
    """NumPy's `x if isinstance(x, (int, float, complex)) else asanyarray(x)`: Python scalars
    (traced ones too) stay weak, everything else is a strong array."""
    if weak_type(x) is not None and not isinstance(x, bool):
        return x
    t = lift(ctx, x)
    return lift(ctx, t, t.dtype) if t.weak is not None else t


def _warn_if_not_finite(atol: Any, rtol: Any) -> None:
    """NumPy's check of static tolerances (a warning, an error or a print per np.geterr)."""
    if isinstance(atol, Tracer) or isinstance(rtol, Tracer):
        return  # traced tolerances: their values are not known while tracing
    if np.all(np.isfinite(atol)) and np.all(np.isfinite(rtol)):
        return
    if np.geterr()["invalid"] == "call":  # the user's "warn", while tracing (trace/context.py)
        import warnings
        warnings.warn(f"One of rtol or atol is not valid, atol: {atol}, rtol: {rtol}", RuntimeWarning, stacklevel=4)
        return
    np.isclose(0.0, 0.0, rtol=rtol, atol=atol)  # NumPy's own error, print or silence for these values


def isclose(a: Any, b: Any, rtol: Any = 1.e-5, atol: Any = 1.e-8, equal_nan: bool = False) -> Any:
    """numpy.isclose: elementwise |a - b| <= atol + rtol*|b| (b's infinities only equal)."""
    ctx = context_of(a, b, rtol, atol)
    if ctx is None:
        return np.isclose(a, b, rtol, atol, equal_nan)
    x, y, atol, rtol = (_operand(ctx, v) for v in (a, b, atol, rtol))
    if isinstance(y, Tracer) and y.weak is None:
        y = lift(ctx, y, result_type(y, 1.0))
    elif weak_type(y) is int:
        y = float(y) if not isinstance(y, Tracer) else lift(ctx, y, np.dtype(np.float64))
        if isinstance(y, Tracer):
            y.weak = float
    _warn_if_not_finite(atol, rtol)
    close = apply_ufunc(np.less_equal, apply_ufunc(np.absolute, apply_ufunc(np.subtract, x, y)),
                        apply_ufunc(np.add, atol, apply_ufunc(np.multiply, rtol, apply_ufunc(np.absolute, y))))
    result = apply_ufunc(np.logical_or, apply_ufunc(np.bitwise_and, close, apply_ufunc(np.isfinite, y)),
                         apply_ufunc(np.equal, x, y))
    if equal_nan:
        both_nan = apply_ufunc(np.bitwise_and, apply_ufunc(np.isnan, x), apply_ufunc(np.isnan, y))
        result = apply_ufunc(np.bitwise_or, result, both_nan)
    result = lift(ctx, result)
    if result.ndim == 0:
        result.scalar = True  # result[()]: NumPy flattens a 0-d answer to a scalar
    return result


def allclose(a: Any, b: Any, rtol: Any = 1.e-5, atol: Any = 1.e-8, equal_nan: bool = False) -> Any:
    """numpy.allclose: all(isclose(...)), a traced bool scalar inside jit (NumPy: a Python bool)."""
    ctx = context_of(a, b, rtol, atol)
    if ctx is None:
        return np.allclose(a, b, rtol, atol, equal_nan)
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _constant(ctx: Any, value: bool) -> Tracer:
    """A bool the shapes alone decide, as a traced scalar like the data-dependent answers."""
    return _all(ctx.const(np.array(value)))


def _as_array(ctx: Any, x: Any) -> Tracer | None:
    """np.asarray(x), or None where NumPy's asarray fails (array_equal is then False)."""
    if isinstance(x, Tracer):
        return lift(ctx, x, x.dtype) if x.weak is not None else x
    try:
        return lift(ctx, asarray(x))
    except Exception:  # noqa: BLE001 - NumPy: "except Exception: return False"
        return None


def _cannot_hold_nan(dtype: np.dtype) -> bool:
    return dtype.kind not in "fc"


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """numpy.array_equal: same shape and equal elements (NaNs equal with equal_nan)."""
    ctx = context_of(a1, a2)
    if ctx is None:
        return np.array_equal(a1, a2, equal_nan)
    t1, t2 = _as_array(ctx, a1), _as_array(ctx, a2)
    if t1 is None or t2 is None or t1.shape != t2.shape:
        return _constant(ctx, False)
    if not equal_nan or (_cannot_hold_nan(t1.dtype) and _cannot_hold_nan(t2.dtype)):
        return _all(apply_ufunc(np.equal, t1, t2))
    if a1 is a2:
        return _constant(ctx, True)  # NumPy: an array equals itself, NaNs included
    nan1, nan2 = apply_ufunc(np.isnan, t1), apply_ufunc(np.isnan, t2)
    # NumPy compares the elements where a1 is not NaN (a1[~a1nan] == a2[~a1nan]) once the NaN
    # positions agree: the same as "equal or a1 is NaN" at every position.
    same = apply_ufunc(np.logical_or, apply_ufunc(np.equal, t1, t2), nan1)
    return _all(apply_ufunc(np.logical_and, apply_ufunc(np.equal, nan1, nan2), same))


def array_equiv(a1: Any, a2: Any) -> Any:
    """numpy.array_equiv: shapes broadcast together and all elements are equal."""
    ctx = context_of(a1, a2)
    if ctx is None:
        return np.array_equiv(a1, a2)
    t1, t2 = _as_array(ctx, a1), _as_array(ctx, a2)
    if t1 is None or t2 is None:
        return _constant(ctx, False)
    try:
        np.broadcast_shapes(shape_of(t1), shape_of(t2))
    except ValueError:
        return _constant(ctx, False)
    return _all(apply_ufunc(np.equal, t1, t2))


allclose.__jk_support__ = "partly: returns a traced bool scalar (NumPy: a Python bool); bool() of it needs a concrete value"
array_equal.__jk_support__ = "partly: returns a traced bool scalar (NumPy: a Python bool); shape mismatch is a constant False"
array_equiv.__jk_support__ = "partly: returns a traced bool scalar (NumPy: a Python bool)"
