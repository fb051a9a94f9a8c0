"""Elementwise functions: NumPy's ufuncs with NEP 50 promotion, broadcasting and casts made
explicit in the IR, plus where / clip / round / positive built from them."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS, ufunc_loop
from ..trace.tracer import Tracer
from ._core import (WEAK_DEFAULT, broadcast_shapes, broadcast_to_shape, context_of, dtype_key,
                    lift, result_type, shape_of, weak_type)

_PY_TYPE_OF_KIND = {"b": bool, "i": int, "u": int, "f": float}


def apply_ufunc(ufunc: np.ufunc, *args: Any) -> Any:
    """Trace `ufunc(*args)`: resolve NumPy's loop for the operand dtypes (weak Python scalars
    included), cast and broadcast operands explicitly, and bind the ufunc's primitive."""
    ctx = context_of(*args)
    if ctx is None:
        return ufunc(*args)
    keys = [dtype_key(a) for a in args]
    all_weak = all(isinstance(k, type) for k in keys)
    if all_weak:
        keys = [WEAK_DEFAULT[k] for k in keys]
    in_dts, out_dts = ufunc_loop(ufunc, keys)
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    ins = [broadcast_to_shape(ctx, lift(ctx, a, dt), shape) for a, dt in zip(args, in_dts)]
    outs = ctx.bind(ufunc.__name__, ins)
    if all_weak:
        for o in outs:
            o.weak = _PY_TYPE_OF_KIND[o.dtype.kind]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _make(name: str):
    uf = getattr(np, name)

    def fn(*args: Any, **kwargs: Any) -> Any:
        from ._core import unsupported_kwargs
        unsupported_kwargs(name, kwargs, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True)
        return apply_ufunc(uf, *args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Traced numpy.{name}: same dtype rules (NEP 50), broadcasting and values as NumPy."
    return fn


UFUNC_FUNCTIONS = {name: _make(name) for name in UNARY_UFUNCS + BINARY_UFUNCS}


def positive(x: Any) -> Any:
    """numpy.positive: a copy with the same dtype (bool is rejected, as NumPy does)."""
    ctx = context_of(x)
    if ctx is None:
        return np.positive(x)
    in_dts, _ = ufunc_loop(np.positive, [dtype_key(x) if not isinstance(dtype_key(x), type) else WEAK_DEFAULT[dtype_key(x)]])
    return lift(ctx, x, in_dts[0])


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """numpy.where(condition, x, y) (the one-argument form needs a dynamic shape: unsupported)."""
    if x is None or y is None:
        from ..errors import UnsupportedOperationError
        raise UnsupportedOperationError("numpy.where with one argument (nonzero) has a data-dependent shape; "
                                        "use where(condition, x, y)")
    ctx = context_of(condition, x, y)
    if ctx is None:
        return np.where(condition, x, y)
    dt = result_type(x, y)
    shape = broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y))
    c = broadcast_to_shape(ctx, lift(ctx, condition, np.dtype(np.bool_)), shape)
    a = broadcast_to_shape(ctx, lift(ctx, x, dt), shape)
    b = broadcast_to_shape(ctx, lift(ctx, y, dt), shape)
    out = ctx.bind1("select", c, a, b)
    if weak_type(x) is not None and weak_type(y) is not None:
        out.weak = _PY_TYPE_OF_KIND[dt.kind]
    return out


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """numpy.clip: maximum then minimum, NaN propagating, with NumPy's result dtype."""
    ctx = context_of(a, a_min, a_max)
    if ctx is None:
        return np.clip(a, a_min, a_max)
    if out is not None:
        from ..errors import UnsupportedOperationError
        raise UnsupportedOperationError("numpy.clip: out= is not supported inside jit")
    lo = kwargs.pop("min", a_min)
    hi = kwargs.pop("max", a_max)
    if lo is None and hi is None:
        raise ValueError("One of max or min must be given")
    result = a
    if lo is not None:
        result = apply_ufunc(np.maximum, result, lo)
    if hi is not None:
        result = apply_ufunc(np.minimum, result, hi)
    return result


def round(a: Any, decimals: int = 0, out: Any = None) -> Any:  # noqa: A001 - mirrors numpy.round
    """numpy.round: round half to even; `decimals` scales as NumPy does (x * 10**d, rint, / 10**d)."""
    ctx = context_of(a)
    if ctx is None:
        return np.round(a, decimals)
    t = lift(ctx, a)
    if t.dtype.kind in "biu":
        if decimals >= 0:
            return t
        from ..errors import UnsupportedOperationError
        raise UnsupportedOperationError("numpy.round of an integer array with negative decimals is not supported inside jit")
    if decimals == 0:
        return apply_ufunc(np.rint, t)
    if decimals > 0:
        f = 10.0 ** decimals
        return apply_ufunc(np.divide, apply_ufunc(np.rint, apply_ufunc(np.multiply, t, f)), f)
    f = 10.0 ** (-decimals)
    return apply_ufunc(np.multiply, apply_ufunc(np.rint, apply_ufunc(np.divide, t, f)), f)


around = round
