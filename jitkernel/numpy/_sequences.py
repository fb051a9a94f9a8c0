"""Sequences computed from traced values: vander (powers of x) and geomspace (a geometric
progression between traced end points).

vander multiplies column by column as NumPy's multiply.accumulate does (not `x ** k`, which
rounds differently); its column count is static. geomspace follows NumPy's Python code: the
start rotated to the positive real axis, logspace between the base-10 logarithms, the end points
set to the exact start and stop; a zero end point, which NumPy refuses with ValueError, is
checked at run time (`raise_if`).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.vander(x, 3))(np.array([2, 3])).tolist()
[[4, 2, 1], [9, 3, 1]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, lift
from ._matrix import logspace
from ._shape import concatenate, moveaxis, reshape, stack
from ._statistics import raise_if
from ._ufuncs import apply_ufunc

__all__ = ["vander", "geomspace"]


def _static_count(n: Any, fname: str, what: str) -> Any:
    if isinstance(n, Tracer):
        raise UnsupportedOperationError(f"numpy.{fname}: a traced {what} is not supported inside jit (the result's "
                                        "shape depends on it); pass it as a static argument (static_argnames)")
    return n


def _as_array(ctx: Any, a: Any) -> Tracer:
    t = lift(ctx, a if isinstance(a, Tracer) else np.asarray(a))
    return Tracer(ctx, t.ir_var) if t.weak is not None else t


def vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    """numpy.vander: columns x**(N-1) ... x**0 (increasing: the other way round)."""
    ctx = context_of(x)
    if ctx is None:
        return np.vander(x, N, increasing)
    t = _as_array(ctx, x)
    if t.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = len_x = t.shape[0]
    if N is not None:
        n = int(_static_count(N, "vander", "N"))
    dt = np.promote_types(t.dtype, int)
    if n <= 0:
        return broadcast_to_shape(ctx, ctx.const(np.zeros((), dt)), (len_x, max(n, 0)))
    t = lift(ctx, t, dt)
    columns = [broadcast_to_shape(ctx, ctx.const(np.ones((), dt)), (len_x,))]
    for _ in range(n - 1):
        columns.append(t if len(columns) == 1 else apply_ufunc(np.multiply, columns[-1], t))
    return stack(columns if increasing else columns[::-1], axis=1)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    """numpy.geomspace between traced end points (num static)."""
    ctx = context_of(start, stop)
    if ctx is None:
        return np.geomspace(start, stop, num, endpoint, dtype, axis)
    num = _static_count(num, "geomspace", "num")
    start, stop = _as_array(ctx, start), _as_array(ctx, stop)
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    zero = apply_ufunc(np.logical_or, apply_ufunc(np.equal, start, 0), apply_ufunc(np.equal, stop, 0))
    start = raise_if(lift(ctx, start, dt), zero, "ValueError", "Geometric sequence cannot include zero")
    stop = lift(ctx, stop, dt)
    out_sign = apply_ufunc(np.sign, start)
    start = apply_ufunc(np.divide, start, out_sign)
    stop = apply_ufunc(np.divide, stop, out_sign)
    result = logspace(apply_ufunc(np.log10, start), apply_ufunc(np.log10, stop), num=num, endpoint=endpoint,
                      base=10.0, dtype=dt)
    result = _exact_ends(ctx, result, start, stop, num, endpoint)
    result = apply_ufunc(np.multiply, result, out_sign)
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return lift(ctx, result, dtype)


def _exact_ends(ctx: Any, result: Tracer, start: Tracer, stop: Tracer, num: int, endpoint: bool) -> Tracer:
    """NumPy's result[0] = start and result[-1] = stop (exp(log(x)) need not be x)."""
    if num == 0:
        return result
    row = (1,) + result.shape[1:]

    def as_row(v: Tracer) -> Tracer:
        return broadcast_to_shape(ctx, reshape(lift(ctx, v, result.dtype), (1,) + v.shape), row)
    if num == 1 or not endpoint:
        return concatenate([as_row(start), result[1:]], axis=0)
    return concatenate([as_row(start), result[1:-1], as_row(stop)], axis=0)


vander.__jk_support__ = "partly: N must be static"
geomspace.__jk_support__ = "partly: num must be static"
