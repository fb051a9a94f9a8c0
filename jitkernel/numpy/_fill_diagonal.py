"""np.fill_diagonal on a traced array: NumPy's `a.flat[:end:step] = val` as np.put at the static
flat positions of the diagonal, through the in-place machinery (the write reaches `a` and every
view of it; `val` repeats over the positions as in NumPy).

>>> import numpy as np, jitkernel as jk
>>> def f(a):
...     np.fill_diagonal(a, [1.0, 2.0])
...     return a
>>> jk.jit(f)(np.zeros((3, 3))).tolist()
[[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import context_of, lift
from ._inplace import put

__all__ = ["fill_diagonal"]


def _diagonal_positions(shape: tuple[int, ...], wrap: bool) -> np.ndarray:
    """NumPy's flat positions of the diagonal: every (n+1)-th element of a 2-d array (stopping
    at the square part unless wrap), else every 1 + n + n*n + ... -th of an all-equal shape."""
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if len(shape) == 2:
        step = shape[1] + 1
        if not wrap:
            end = shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
    return np.arange(int(np.prod(shape)), dtype=np.intp)[:end:step]


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """numpy.fill_diagonal: writes `val` into the main diagonal of `a` in place."""
    ctx = context_of(a, val)
    if ctx is None:
        return np.fill_diagonal(a, val, wrap)
    positions = _diagonal_positions(lift(ctx, a).shape, wrap)
    if positions.size:
        put(a, positions, val)
    return None
