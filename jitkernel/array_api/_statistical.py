"""The standard's statistical and utility functions. Accumulation dtypes follow the standard,
which NumPy 2 already implements with int64 as the default integer: `sum`/`prod`/`cumulative_*`
of a smaller signed integer give int64, of a smaller unsigned integer uint64, floats keep
their dtype. `std`/`var` take `correction` (NumPy's ddof).

>>> import numpy as np
>>> sum(np.arange(3, dtype=np.int32)).dtype, std(np.array([1.0, 3.0]), correction=1)
(dtype('int64'), array(1.41421356))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp


def _array(x: Any) -> Any:
    """A 0-d result as a 0-d array, not a NumPy scalar (the standard's functions return arrays)."""
    return np.asarray(x) if isinstance(x, np.generic) else x


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    return jnp.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    return jnp.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _array(jnp.max(x, axis=axis, keepdims=keepdims))


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _array(jnp.min(x, axis=axis, keepdims=keepdims))


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _array(jnp.mean(x, axis=axis, keepdims=keepdims))


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    return _array(jnp.prod(x, axis=axis, dtype=dtype, keepdims=keepdims))


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _array(jnp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims))


def std(x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False) -> Any:
    return _array(jnp.std(x, axis=axis, ddof=correction, keepdims=keepdims))


def var(x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False) -> Any:
    return _array(jnp.var(x, axis=axis, ddof=correction, keepdims=keepdims))


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _array(jnp.all(x, axis=axis, keepdims=keepdims))


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _array(jnp.any(x, axis=axis, keepdims=keepdims))


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    kwargs = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return jnp.diff(x, n=n, axis=axis, **kwargs)


FUNCTIONS = {f.__name__: f for f in (cumulative_sum, cumulative_prod, max, min, mean, prod, sum, std, var,
                                     all, any, diff)}
