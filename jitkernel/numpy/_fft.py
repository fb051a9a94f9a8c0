"""`numpy.fft` inside a trace: every transform is one library step running NumPy's pocketfft
(`fft` primitive, ir/library_prims.py), with n/s, axis/axes and norm. Most results are complex:
without complex dtypes in the engine, those raise TypeError naming the dtype when traced; the
transforms with real results (irfft, irfftn, irfft2, hfft of real input) work either way.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.fft.irfft(x, n=4))(np.array([1.0, 0.0, 0.0]))
array([0.25, 0.25, 0.25, 0.25])
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import SUPPORTED_DTYPES
from ..trace.operands import context_of, lift
from ._dispatch import register_function

__all__: list[str] = []  # reached through np.fft.* (register_function)

_ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_N_D = ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn")


def _static_tuple(x: Any, what: str) -> Any:
    if x is None:
        return None
    try:
        return tuple(operator.index(v) for v in x)
    except TypeError as e:
        raise UnsupportedOperationError(f"numpy.fft: {what} must be static integers inside jit") from e


def _transform(fn_name: str):
    np_fn = getattr(np.fft, fn_name)
    one_d = fn_name in _ONE_D

    if one_d:
        def traced(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
            ctx = context_of(a)
            if ctx is None:
                return np_fn(a, n=n, axis=axis, norm=norm, out=out)
            _no_out(fn_name, out)
            n = None if n is None else operator.index(n)
            return ctx.bind1("fft", lift(ctx, a), fn=fn_name, n=n, axes=operator.index(axis), norm=norm)
    else:
        default_axes = (-2, -1) if fn_name.endswith("2") else None

        def traced(a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None, out: Any = None) -> Any:
            ctx = context_of(a)
            if ctx is None:
                return np_fn(a, s=s, axes=axes, norm=norm, out=out)
            _no_out(fn_name, out)
            return ctx.bind1("fft", lift(ctx, a), fn=fn_name, n=_static_tuple(s, "s"),
                             axes=_static_tuple(axes, "axes"), norm=norm)
    traced.__name__ = fn_name
    if np.dtype(np.complex128) not in SUPPORTED_DTYPES and fn_name not in ("irfft", "irfft2", "irfftn", "hfft"):
        traced.__jk_support__ = "partly: complex results need complex dtypes (TypeError naming the dtype)"
    traced.__doc__ = f"numpy.fft.{fn_name} as one library step (NumPy's pocketfft)."
    register_function(np_fn, traced)
    return traced


def _no_out(fn_name: str, out: Any) -> None:
    if out is not None:
        raise UnsupportedOperationError(f"numpy.fft.{fn_name}: out= is not supported inside jit")


for _name in _ONE_D + _N_D:
    globals()[_name] = _transform(_name)
