"""The standard's creation functions over jitkernel.numpy's (which make constants inside a trace
and call NumPy outside one). `device=` accepts None or "cpu" (_device.py).

>>> asarray([1, 2], dtype=None).dtype, eye(2, 3, k=1).shape
(dtype('int64'), (2, 3))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..trace.operands import context_of
from ._device import check_device


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.arange(start, stop, step, dtype=dtype)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """`obj` as an array. copy=True always copies; copy=False raises ValueError where a copy
    would be needed (a dtype change); None copies only when needed."""
    check_device(device)
    if context_of(obj) is None:
        return np.asarray(obj, dtype=dtype, copy=copy)
    out = jnp.asarray(obj, dtype=dtype)
    if copy is False and out is not obj and hasattr(obj, "dtype"):
        raise ValueError("asarray(copy=False): converting the array needs a copy")
    return jnp.copy(out) if copy is True and out is obj else out


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.empty(shape, dtype=dtype)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.empty_like(x, dtype=dtype)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.eye(n_rows, n_cols, k=k, dtype=np.float64 if dtype is None else dtype)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An array from a DLPack provider; a traced array (already on the jitted device) is itself."""
    check_device(device)
    if context_of(x) is None:
        return np.from_dlpack(x, copy=copy)
    return asarray(x, copy=copy)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.full(shape, fill_value, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.full_like(x, fill_value, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:
    check_device(device)
    return jnp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    return list(jnp.meshgrid(*arrays, indexing=indexing))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.ones(shape, dtype=dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.ones_like(x, dtype=dtype)


def tril(x: Any, /, *, k: int = 0) -> Any:
    return jnp.tril(x, k)


def triu(x: Any, /, *, k: int = 0) -> Any:
    return jnp.triu(x, k)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.zeros(shape, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return jnp.zeros_like(x, dtype=dtype)


FUNCTIONS = {f.__name__: f for f in (arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like,
                                     linspace, meshgrid, ones, ones_like, tril, triu, zeros, zeros_like)}
