"""1-d signal functions inside a trace: convolve, correlate and interp as library steps running
NumPy's own loops (same values, dtypes and errors).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.convolve(a, np.array([1.0, -1.0]), mode="valid"))(np.array([1.0, 4.0, 9.0]))
array([3., 5.])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import context_of, lift

__all__ = ["convolve", "correlate", "interp"]


def _convolution(fn: str, a: Any, v: Any, mode: str) -> Any:
    ctx = context_of(a, v)
    if ctx is None:
        return getattr(np, fn)(a, v, mode=mode)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    x, y = lift(ctx, a), lift(ctx, v)
    if x.ndim == 0:
        x = x.reshape((1,))
    if y.ndim == 0:
        y = y.reshape((1,))
    return ctx.bind1("convolve", x, y, fn=fn, mode=mode)


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """numpy.convolve: modes 'full', 'same', 'valid'."""
    return _convolution("convolve", a, v, mode)


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """numpy.correlate: modes 'valid', 'same', 'full'."""
    return _convolution("correlate", a, v, mode)


def _static_number(value: Any, what: str) -> Any:
    if isinstance(value, Tracer):
        raise UnsupportedOperationError(f"numpy.interp: {what} must be static (a Python or NumPy number) inside jit")
    return value if value is None or isinstance(value, (int, float, complex, np.generic)) else np.asarray(value)[()]


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """numpy.interp: piecewise-linear interpolation; left, right and period static."""
    ctx = context_of(x, xp, fp)
    if ctx is None:
        return np.interp(x, xp, fp, left=left, right=right, period=period)
    if period is not None and _static_number(period, "period") == 0:
        raise ValueError("period must be a non-zero value")
    return ctx.bind1("interp", lift(ctx, x), lift(ctx, xp), lift(ctx, fp), left=_static_number(left, "left"),
                     right=_static_number(right, "right"), period=_static_number(period, "period"))
