"""The standard's creation functions over jitkernel.numpy's. Inside a trace each returns a new
traced array (writable: `out = xp.zeros(n); out[i] = ...` records the write, as `np.zeros` does
in the user's code); outside one they call NumPy. `device=` accepts None or "cpu" (_device.py).

>>> asarray([1, 2], dtype=None).dtype, eye(2, 3, k=1).shape
(dtype('int64'), (2, 3))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..trace.context import current_context
from ..trace.creation import traced_creation
from ..trace.operands import context_of
from ..trace.tracer import Tracer, fresh
from ._device import check_device


def _owned(value: Any) -> Any:
    """Inside a trace, a NumPy result as a new traced array (a constant could not hold writes)."""
    ctx = current_context()
    if ctx is None or isinstance(value, Tracer):
        return value
    return fresh(ctx.const(np.asarray(value)))


def _filled(name: str, *args: Any, **kwargs: Any) -> Any:
    """numpy.<name> (zeros, ones, empty, full and their *_like) as a traced array inside a trace:
    a broadcast fill value, never a constant of the array's size."""
    made = traced_creation(getattr(np, name), args, kwargs) if current_context() is not None else NotImplemented
    return getattr(jnp, name)(*args, **kwargs) if made is NotImplemented else made


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _owned(jnp.arange(start, stop, step, dtype=dtype))


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    """`obj` as an array. copy=True always copies; copy=False raises ValueError where a copy
    would be needed (a dtype change); None copies only when needed. Inside a trace, a NumPy
    array stays that array (a constant of the program) unless copied."""
    check_device(device)
    if context_of(obj) is None:
        return np.asarray(obj, dtype=dtype, copy=copy)
    if isinstance(obj, (Tracer, np.ndarray)):
        out = jnp.asarray(obj, dtype=dtype)
        if copy is False and out is not obj:
            raise ValueError("asarray(copy=False): converting the array needs a copy")
        return _owned(jnp.copy(out) if isinstance(out, Tracer) else out) if copy is True else out
    return _owned(jnp.asarray(obj, dtype=dtype))  # a new array from Python data


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("empty", shape, dtype=dtype)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("empty_like", x, dtype=dtype)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _owned(jnp.eye(n_rows, n_cols, k=k, dtype=np.float64 if dtype is None else dtype))


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An array from a DLPack provider; a traced array (already on the jitted device) is itself."""
    check_device(device)
    if context_of(x) is None:
        return np.from_dlpack(x, copy=copy)
    return asarray(x, copy=copy)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("full", shape, fill_value, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("full_like", x, fill_value, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Any:
    check_device(device)
    return _owned(jnp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def meshgrid(*arrays: Any, indexing: str = "xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    return list(jnp.meshgrid(*arrays, indexing=indexing))


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("ones", shape, dtype=dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("ones_like", x, dtype=dtype)


def tril(x: Any, /, *, k: int = 0) -> Any:
    return jnp.tril(x, k)


def triu(x: Any, /, *, k: int = 0) -> Any:
    return jnp.triu(x, k)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("zeros", shape, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _filled("zeros_like", x, dtype=dtype)


FUNCTIONS = {f.__name__: f for f in (arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like,
                                     linspace, meshgrid, ones, ones_like, tril, triu, zeros, zeros_like)}
