"""Array creation. Functions of static arguments (zeros, arange, eye, ...) are NumPy's own and
become constants of the program; the *_like functions of a traced array broadcast a scalar."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import check_dtype
from ..trace.tracer import Tracer
from ..trace.views import fresh, is_c_contiguous, is_f_contiguous
from ..trace.operands import broadcast_to_shape, context_of, lift
from ._shape import stack, broadcast_to, reshape
from ._dispatch import register_function

zeros, ones, full, empty = np.zeros, np.ones, np.full, np.empty
arange, linspace, eye, identity = np.arange, np.linspace, np.eye, np.identity


def _filled(a: Any, fill: Any, dtype: Any, shape: Any) -> Any:
    ctx = context_of(a)
    if ctx is None or not isinstance(a, Tracer):
        return None
    dt = check_dtype(dtype, "the dtype= of *_like") if dtype is not None else a.dtype
    shape = a.shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    return ctx.request_byteorder(fresh(broadcast_to_shape(ctx, ctx.const(_fill_value(fill, dt)), shape)), dtype)


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
        return fill_value._ctx.request_byteorder(
            fresh(broadcast_to(lift(fill_value._ctx, fill_value, check_dtype(dtype) if dtype else a.dtype),
                               a.shape if shape is None else shape)), dtype)
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
        dt = None if dtype is None else check_dtype(dtype)
        if dt is not None and (dt != a.dtype or ctx.byteorder_differs(a, dtype)):
            # another byte order only: a new array all the same (an identity convert, removed by
            # simplify after the byte-order analysis)
            out = lift(ctx, a, dt) if dt != a.dtype else ctx.bind1("convert", a, dtype=dt)
            return ctx.request_byteorder(_new_array(out), dtype)
        return a if a.weak is None and not (a.ndim == 0 and a.scalar) else _new_array(a)
    if isinstance(a, (list, tuple)):
        if not _holds_tracer(a):  # concrete data (an empty list too: NumPy's float64 (0,)), a new array
            return fresh(ctx.const(np.asarray(a, dtype=dtype)))
        out = stack([asarray(x) for x in a])
        return out if dtype is None else ctx.request_byteorder(lift(ctx, out, check_dtype(dtype)), dtype)
    return np.asarray(a, dtype=dtype)


def _holds_tracer(items: Any) -> bool:
    """Whether a Tracer is anywhere in nested lists and tuples."""
    return any(isinstance(x, Tracer) or (isinstance(x, (list, tuple)) and _holds_tracer(x)) for x in items)


def asanyarray(a: Any, dtype: Any = None, order: Any = None, **kw: Any) -> Any:
    """numpy.asanyarray: numpy.asarray for the arrays a trace holds (no subclasses)."""
    return asarray(a, dtype=dtype)


def ascontiguousarray(a: Any, dtype: Any = None, **kw: Any) -> Any:
    """numpy.ascontiguousarray: the array itself when it is C-contiguous with that dtype (as
    NumPy returns it), else a C-ordered copy; a 0-d array becomes (1,), a view, as in NumPy."""
    return _in_layout(a, dtype, is_c_contiguous)


def asfortranarray(a: Any, dtype: Any = None, **kw: Any) -> Any:
    """numpy.asfortranarray: the array itself when it is Fortran-contiguous (1-d contiguous
    arrays are) with that dtype, else a copy with the same values. (jitkernel's copy is laid out
    as its own results are: the values, shape and dtype are NumPy's, `.flags` of the returned
    array may differ; docs/numpy-support.md.)"""
    return _in_layout(a, dtype, is_f_contiguous)


def _in_layout(a: Any, dtype: Any, has_layout: Any) -> Any:
    out = asarray(a, dtype=dtype)  # the same Tracer when no conversion is needed
    if not isinstance(out, Tracer):
        return np.asarray(out).reshape(-1) if np.ndim(out) == 0 else out
    if out.ndim == 0:
        return reshape(out, (1,))  # NumPy's ndmin=1: a view of a 0-d array, a new array of a scalar
    return out if has_layout(out) else fresh(out)


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


# Functions of shapes and lengths only, which take no array and so never reach the dispatch
# protocols: NumPy runs them at trace time and the result is a constant of the program, exactly
# NumPy's. Registered as their own implementation so the support table lists them as "static"
# (and trace/unsupported.py does not refuse them: they were correct constants before that guard).
def _register_static_functions() -> None:
    for f in (np.indices, np.tril_indices, np.triu_indices, np.diag_indices, np.bartlett, np.blackman,
              np.hamming, np.hanning, np.kaiser, np.fft.fftfreq, np.fft.rfftfreq):
        register_function(f, f)


_register_static_functions()
