"""fix, isposinf and isneginf: NumPy's "ufunc-like" functions (numpy/lib/_ufunclike_impl.py),
written over the traced ufuncs as NumPy writes them:

- fix(x) is trunc(x) (integers stay integers, as in NumPy 2).
- isposinf(x) is isinf(x) & ~signbit(x), isneginf(x) is isinf(x) & signbit(x): complex input
  raises NumPy's TypeError ("... not supported for complex128 values because it would be
  ambiguous").

>>> import numpy as np, jitkernel as jk
>>> jk.jit(np.isneginf)(np.array([-np.inf, 0.0, np.inf]))
array([ True, False, False])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import context_of, lift
from ._ufuncs import apply_ufunc

__all__ = ["fix", "isposinf", "isneginf"]


def fix(x: Any, out: Any = None) -> Any:
    """numpy.fix: round toward zero (np.trunc)."""
    if context_of(x) is None:
        return np.fix(x, out=out)
    return apply_ufunc(np.trunc, x)


def _sign_test(x: Any, negative: bool) -> Any:
    ctx = context_of(x)
    t = lift(ctx, x)
    if t.dtype.kind == "c":
        raise TypeError(f"This operation is not supported for {t.dtype} values because it would be ambiguous.")
    sign = apply_ufunc(np.signbit, t)
    if not negative:
        sign = apply_ufunc(np.invert, sign)
    return apply_ufunc(np.logical_and, apply_ufunc(np.isinf, t), sign)


def isposinf(x: Any, out: Any = None) -> Any:
    """numpy.isposinf: True at +inf."""
    if context_of(x) is None:
        return np.isposinf(x, out=out)
    return _sign_test(x, negative=False)


def isneginf(x: Any, out: Any = None) -> Any:
    """numpy.isneginf: True at -inf."""
    if context_of(x) is None:
        return np.isneginf(x, out=out)
    return _sign_test(x, negative=True)
