"""Array creation. Functions of static arguments (zeros, arange, eye, ...) are NumPy's own and
become constants of the program; the *_like functions of a traced array broadcast a scalar."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import check_dtype
from ..trace.tracer import Tracer
from ..trace.views import fresh
from ._core import broadcast_to_shape, context_of, lift
from ._shape import stack

zeros, ones, full, empty = np.zeros, np.ones, np.full, np.empty
arange, linspace, eye, identity = np.arange, np.linspace, np.eye, np.identity


def _filled(a: Any, fill: Any, dtype: Any, shape: Any) -> Any:
    ctx = context_of(a)
    if ctx is None or not isinstance(a, Tracer):
        return None
    dt = check_dtype(dtype, "the dtype= of *_like") if dtype is not None else a.dtype
    shape = a.shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    return fresh(broadcast_to_shape(ctx, ctx.const(_fill_value(fill, dt)), shape))  # a new array


def _fill_value(fill: Any, dt: np.dtype) -> np.ndarray:
    """The fill converted as numpy.full / full_like do (copyto with casting="unsafe": NaN into
    an int dtype is NumPy's value with its warning, not asarray's ValueError)."""
    value = np.empty(np.shape(fill), dt)
    np.copyto(value, fill, casting="unsafe")
    return value


def zeros_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
    """numpy.zeros_like."""
    r = _filled(a, 0, dtype, shape)
    return np.zeros_like(a, dtype=dtype, shape=shape) if r is None else r


def ones_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
    """numpy.ones_like."""
    r = _filled(a, 1, dtype, shape)
    return np.ones_like(a, dtype=dtype, shape=shape) if r is None else r


def empty_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
    """numpy.empty_like (zeros inside jit: never uninitialised memory)."""
    r = _filled(a, 0, dtype, shape)
    return np.empty_like(a, dtype=dtype, shape=shape) if r is None else r


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
    """numpy.full_like (the fill value must be static)."""
    if isinstance(fill_value, Tracer):
        from ._shape import broadcast_to
        return fresh(broadcast_to(lift(fill_value._ctx, fill_value, check_dtype(dtype) if dtype else a.dtype),
                                  a.shape if shape is None else shape))
    r = _filled(a, fill_value, dtype, shape)
    return np.full_like(a, fill_value, dtype=dtype, shape=shape) if r is None else r


def _new_array(t: Tracer) -> Tracer:
    """A fresh ndarray with t's values: strong (NEP 50), 0-d arrays stay arrays, no shared memory."""
    out = Tracer(t._ctx, t.ir_var)
    out.scalar = False
    return out


def asarray(a: Any, dtype: Any = None, order: Any = None, **kw: Any) -> Any:
    """numpy.asarray: a traced array stays traced (the same array when no conversion is
    needed); a list holding traced values is stacked; a scalar becomes a strong 0-d array."""
    ctx = context_of(a)
    if ctx is None:
        return np.asarray(a, dtype=dtype)
    if isinstance(a, Tracer):
        if dtype is not None and check_dtype(dtype) != a.dtype:
            return _new_array(lift(ctx, a, check_dtype(dtype)))
        return a if a.weak is None and not (a.ndim == 0 and a.scalar) else _new_array(a)
    if isinstance(a, (list, tuple)):
        out = stack([asarray(x) for x in a])
        return out if dtype is None else lift(ctx, out, check_dtype(dtype))
    return np.asarray(a, dtype=dtype)


def array(a: Any, dtype: Any = None, copy: Any = True, **kw: Any) -> Any:
    """numpy.array: a new array (a copy unless copy=False allows sharing)."""
    out = asarray(a, dtype=dtype)
    if isinstance(out, Tracer) and out is a and copy is not False and copy is not None:  # copy=None: only if needed
        return _new_array(out)
    return out


def copy(a: Any, **kw: Any) -> Any:
    """numpy.copy: a new array."""
    out = asarray(a)
    return _new_array(out) if isinstance(out, Tracer) and out is a else out
