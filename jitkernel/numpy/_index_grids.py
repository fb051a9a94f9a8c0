"""Index grids of static sizes: fromfunction, tril_indices_from, triu_indices_from,
diag_indices_from, mask_indices (np.indices, tril_indices, triu_indices and diag_indices are
NumPy's own, run at trace time: numpy/_creation.py).

The `*_from` functions read only the traced array's shape, which is static, so their result is
NumPy's own constant. `jitkernel.numpy.fromfunction` calls the function on traced index grids
(a small arange broadcast along each axis: an index map, no constant of the grid's size);
`np.fromfunction` itself takes no array and is never dispatched, so inside jit NumPy runs it on
constant grids, and a function that reads traced values closed over still traces them.

>>> import numpy as np, jitkernel as jk, jitkernel.numpy as jnp
>>> jk.jit(lambda s: jnp.fromfunction(lambda i, j: i * s + j, (2, 3), dtype=int))(10).tolist()
[[0, 1, 2], [10, 11, 12]]
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.context import current_context
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, lift
from ._dispatch import register_function

__all__ = ["fromfunction", "tril_indices_from", "triu_indices_from", "diag_indices_from"]


def _static_int(value: Any, fname: str, what: str) -> int:
    if isinstance(value, Tracer):
        raise UnsupportedOperationError(
            f"numpy.{fname}: a traced {what} is not supported inside jit (the result's shape depends on it); "
            "pass it as a static argument (static_argnames)")
    return value


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, like: Any = None, **kwargs: Any) -> Any:
    """numpy.fromfunction: `function(*grids, **kwargs)`, the grids traced inside jit."""
    ctx = current_context()
    if ctx is None or like is not None:
        return np.fromfunction(function, shape, dtype=dtype, like=like, **kwargs)
    shape = tuple(operator.index(_static_int(n, "fromfunction", "shape")) for n in shape)
    dt = np.dtype(dtype)
    grids = []
    for axis, n in enumerate(shape):
        line = np.arange(n, dtype=dt).reshape((1,) * axis + (n,) + (1,) * (len(shape) - axis - 1))
        grids.append(broadcast_to_shape(ctx, ctx.const(line), shape))
    return function(*grids, **kwargs)


def _shape_of_traced(arr: Any) -> tuple:
    ctx = context_of(arr)
    return lift(ctx, arr).shape if ctx is not None else np.shape(arr)


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    """numpy.tril_indices_from: NumPy's constant for the traced array's (static) shape."""
    shape = _shape_of_traced(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.tril_indices(shape[-2], k=_static_int(k, "tril_indices_from", "k"), m=shape[-1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    """numpy.triu_indices_from: NumPy's constant for the traced array's (static) shape."""
    shape = _shape_of_traced(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.triu_indices(shape[-2], k=_static_int(k, "triu_indices_from", "k"), m=shape[-1])


def diag_indices_from(arr: Any) -> tuple:
    """numpy.diag_indices_from: NumPy's constant for the traced array's (static) shape."""
    shape = _shape_of_traced(arr)
    if not len(shape) >= 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


# np.mask_indices takes a size and a function of a NumPy array (np.triu, np.tril): NumPy
# computes it at trace time, a constant ("static" in the support table).
register_function(np.mask_indices, np.mask_indices)
