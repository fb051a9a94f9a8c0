"""The standard's searching, sorting and indexing functions. `sort`/`argsort` add `descending`
(stable: equal elements keep their order) to NumPy's; `take` and `take_along_axis` take
the standard's keyword-only `axis`.

>>> import numpy as np
>>> argsort(np.array([1, 3, 1, 2]), descending=True).tolist()
[1, 3, 0, 2]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp


def _array(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, np.generic) else x


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    return _array(jnp.argmax(x, axis=axis, keepdims=keepdims))


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    return _array(jnp.argmin(x, axis=axis, keepdims=keepdims))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _array(jnp.asarray(jnp.count_nonzero(x, axis=axis, keepdims=keepdims)))


def nonzero(x: Any, /) -> tuple:
    """Indices of the non-zero elements (a data-dependent shape: as jitkernel.numpy.nonzero)."""
    if x.ndim == 0:
        raise ValueError("nonzero: zero-dimensional arrays are not allowed (the standard)")
    return tuple(jnp.nonzero(x))


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    return _array(jnp.searchsorted(x1, x2, side=side, sorter=sorter))


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    return jnp.where(condition, x1, x2)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    if not descending:
        return jnp.argsort(x, axis=axis, stable=stable)
    # Sorting the reversed array ascending and reversing the result orders values descending
    # with equal values in their original order (a stable descending sort).
    n = x.shape[axis] if x.ndim else 1
    flipped = jnp.argsort(jnp.flip(x, axis=axis), axis=axis, stable=True)
    return (n - 1) - jnp.flip(flipped, axis=axis)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    if not descending:
        return jnp.sort(x, axis=axis, stable=stable)
    return jnp.flip(jnp.sort(x, axis=axis, stable=stable), axis=axis)


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    if axis is None and x.ndim != 1:
        raise ValueError("take: axis is required for arrays that are not one-dimensional (the standard)")
    return jnp.take(x, indices, axis=axis)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    return jnp.take_along_axis(x, indices, axis=axis)


FUNCTIONS = {f.__name__: f for f in (argmax, argmin, count_nonzero, nonzero, searchsorted, where, argsort, sort,
                                     take, take_along_axis)}
