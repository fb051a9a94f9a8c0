"""numpy.linalg.tensorinv and tensorsolve inside a trace: NumPy's own code (a transpose and
reshapes around linalg inv / solve, numpy/_linalg_lib.py's library steps), so the values are
NumPy's LAPACK results and the derivatives those of inv and solve.

>>> import numpy as np, jitkernel as jk
>>> a = np.eye(6).reshape(6, 2, 3) * 2.0
>>> jk.jit(lambda a: np.linalg.tensorinv(a, ind=1))(a).shape
(2, 3, 6)
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ..trace.operands import context_of, lift
from ._dispatch import register_function
from ._linalg_lib import inv, solve
from ._shape import ravel, reshape, transpose

__all__: list[str] = []  # reached through register_function (np.linalg.*)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """numpy.linalg.tensorinv: the first `ind` axes against the rest, inverted as a matrix."""
    ctx = context_of(a)
    if ctx is None:
        return np.linalg.tensorinv(a, ind)
    t = lift(ctx, a)
    oldshape = tuple(t.shape)
    if not ind > 0:
        raise ValueError("Invalid ind argument.")
    invshape = oldshape[ind:] + oldshape[:ind]
    prod = math.prod(oldshape[ind:])
    ia = inv(reshape(t, (prod, -1)))
    return reshape(ia, invshape)


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """numpy.linalg.tensorsolve: `axes` of a moved last, then a (prod, prod) solve of b's ravel;
    the result has a's trailing shape (the unknowns)."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.linalg.tensorsolve(a, b, axes)
    ta, tb = lift(ctx, a), lift(ctx, b)
    an = ta.ndim
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:  # NumPy's loop: each listed axis moved to the end, in order
            allaxes.remove(operator.index(k))
            allaxes.insert(an, operator.index(k))
        ta = transpose(ta, allaxes)
    oldshape = tuple(ta.shape)[-(an - tb.ndim):]
    prod = math.prod(oldshape)
    if math.prod(ta.shape) != prod ** 2:
        raise np.linalg.LinAlgError(
            "Input arrays must satisfy the requirement \
            prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    res = solve(reshape(ta, (prod, prod)), ravel(tb))
    return reshape(res, oldshape)


register_function(np.linalg.tensorinv, tensorinv)
register_function(np.linalg.tensorsolve, tensorsolve)
