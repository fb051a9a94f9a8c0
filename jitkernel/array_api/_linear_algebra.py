"""The standard's linear algebra functions of the main namespace (matmul, matrix_transpose,
tensordot, vecdot); `linalg.py` holds the extension.

>>> import numpy as np
>>> vecdot(np.array([1j, 2]), np.array([1j, 1])).item()
(3+0j)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp


def _array(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, np.generic) else x


def matmul(x1: Any, x2: Any, /) -> Any:
    return _array(jnp.matmul(x1, x2))


def matrix_transpose(x: Any, /) -> Any:
    """The last two axes swapped (an array of fewer than two dimensions is an error)."""
    if x.ndim < 2:
        raise ValueError("matrix_transpose: x must have at least two dimensions")
    return jnp.swapaxes(x, -1, -2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return _array(jnp.tensordot(x1, x2, axes=axes))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot products along `axis` (x1 conjugated), after broadcasting the other axes."""
    return _array(jnp.vecdot(x1, x2, axis=axis))


FUNCTIONS = {f.__name__: f for f in (matmul, matrix_transpose, tensordot, vecdot)}
