"""The standard's `linalg` extension: NumPy 2's `numpy.linalg` functions, which route to
jitkernel.numpy's implementations when a traced array is among the arguments (the
`__array_function__` protocol) and run NumPy otherwise.

>>> import numpy as np
>>> float(vector_norm(np.array([3.0, 4.0])))
5.0
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..trace.operands import context_of
from ._linear_algebra import matmul, matrix_transpose, tensordot, vecdot


def _array(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, np.generic) else x


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    return np.linalg.cholesky(x, upper=upper)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return np.linalg.cross(x1, x2, axis=axis)


def det(x: Any, /) -> Any:
    return _array(np.linalg.det(x))


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return np.linalg.diagonal(x, offset=offset)


def eigh(x: Any, /) -> Any:
    return np.linalg.eigh(x)


def eigvalsh(x: Any, /) -> Any:
    return np.linalg.eigvalsh(x)


def inv(x: Any, /) -> Any:
    return np.linalg.inv(x)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    return _array(np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord))


def matrix_power(x: Any, n: int, /) -> Any:
    return np.linalg.matrix_power(x, n)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    return _array(np.linalg.matrix_rank(x, rtol=rtol))


def outer(x1: Any, x2: Any, /) -> Any:
    return np.linalg.outer(x1, x2)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The pseudo-inverse; `rtol` may be a traced array (jitkernel.numpy's pinv wants it static)."""
    if rtol is None or isinstance(rtol, (int, float)) or context_of(x, rtol) is None:
        return np.linalg.pinv(x, rtol=rtol)
    # NumPy 2's algorithm with array operations only: singular values below rtol * the largest
    # are dropped (their reciprocal is taken as 0).
    a = jnp.conj(x)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    cutoff = jnp.expand_dims(jnp.asarray(rtol), -1) * jnp.max(s, axis=-1, keepdims=True)
    large = s > cutoff
    s_inv = jnp.where(large, 1 / jnp.where(large, s, 1), 0).astype(s.dtype)
    return jnp.matmul(jnp.swapaxes(vt, -1, -2), jnp.expand_dims(s_inv, -1) * jnp.swapaxes(u, -1, -2))


def qr(x: Any, /, *, mode: str = "reduced") -> Any:
    return np.linalg.qr(x, mode=mode)


def slogdet(x: Any, /) -> Any:
    return np.linalg.slogdet(x)


def solve(x1: Any, x2: Any, /) -> Any:
    return np.linalg.solve(x1, x2)


def svd(x: Any, /, *, full_matrices: bool = True) -> Any:
    return np.linalg.svd(x, full_matrices=full_matrices)


def svdvals(x: Any, /) -> Any:
    return np.linalg.svdvals(x)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return _array(np.linalg.trace(x, offset=offset, dtype=dtype))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    return _array(np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord))


__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
