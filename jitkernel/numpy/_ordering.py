"""sort_complex, lexsort and isin: NumPy functions built on sorting, written over the traced
sort, argsort and searchsorted (numpy/_sorting.py), so ties and NaNs order as NumPy orders them.

- sort_complex(a): np.sort, then complex64 for int8/16 and uint8/16, complex128 for the
  other real dtypes (NumPy's rule).
- lexsort(keys, axis): the last key is the primary one: a stable argsort of the first key,
  then of each next key in the order found so far, as NumPy defines the result.
- isin(element, test_elements, assume_unique, invert, kind): the test elements sorted once,
  each element looked up with searchsorted and compared with what it finds (NaN is in
  nothing, as with NumPy's ==). kind='table' gives the same answer; NumPy's ValueErrors for
  an unknown kind and for 'table' on non-integer arrays. (NumPy 2.4 no longer has in1d.)

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a, b: np.isin(a, b))(np.array([1, 5, 3]), np.array([3, 4, 1]))
array([ True, False,  True])
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..trace.operands import broadcast_to_shape, context_of, lift, normalize_axis, result_type
from ..trace.tracer import Tracer
from ._ufuncs import apply_ufunc
from ._creation import asarray
from ._shape import ravel
from ._sorting import searchsorted, sort, argsort

__all__ = ["sort_complex", "lexsort", "isin"]


def _array(ctx: Any, x: Any) -> Tracer:
    t = lift(ctx, asarray(x) if isinstance(x, (list, tuple)) else x)  # a list holding traced elements is stacked
    return lift(ctx, t, t.dtype) if t.weak is not None else t


def sort_complex(a: Any) -> Any:
    """numpy.sort_complex: sorted along the last axis, as a complex array."""
    ctx = context_of(a)
    if ctx is None:
        return np.sort_complex(a)
    b = sort(_array(ctx, a))
    if b.dtype.kind == "c":
        return b
    target = np.dtype("F") if b.dtype.char in "bhBH" else np.dtype("G") if b.dtype.char == "g" else np.dtype("D")
    return lift(ctx, b, target)


def lexsort(keys: Any, axis: int = -1) -> Any:
    """numpy.lexsort: indices sorting by the last key, ties broken by the one before, ..."""
    ctx = context_of(keys) if not isinstance(keys, (list, tuple)) else context_of(*keys)
    if ctx is None:
        return np.lexsort(keys, axis)
    if isinstance(keys, Tracer):
        keys = [keys[i] for i in range(keys.shape[0])]  # NumPy: the rows (a 1-d array: 0-d keys)
    keys = [_array(ctx, k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({k.shape for k in keys}) > 1:
        raise ValueError("all keys need to be the same shape")
    if keys[0].ndim == 0:
        normalize_axis(operator.index(axis), 1)  # NumPy's AxisError for axis beyond a 0-d key
        return lift(ctx, np.array(0, np.intp))[()]
    ax = normalize_axis(operator.index(axis), keys[0].ndim)
    order = argsort(keys[0], axis=ax, kind="stable")
    for key in keys[1:]:
        order = np.take_along_axis(order, argsort(np.take_along_axis(key, order, axis=ax), axis=ax, kind="stable"),
                                   axis=ax)
    return order


def _check_kind(kind: Any, *dtypes: np.dtype) -> None:
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    if kind == "table" and any(d.kind not in "biu" for d in dtypes):
        raise ValueError("The 'table' method is only supported for boolean or integer arrays. "
                         "Please select 'sort' or None for kind.")


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
         kind: Any = None) -> Any:
    """numpy.isin: whether each element is among test_elements (a bool array of element's shape)."""
    ctx = context_of(element, test_elements)
    if ctx is None:
        return np.isin(element, test_elements, assume_unique, invert, kind=kind)
    a, b = _array(ctx, element), ravel(_array(ctx, test_elements))
    _check_kind(kind, a.dtype, b.dtype)
    if b.shape[0] == 0:
        found = broadcast_to_shape(ctx, ctx.const(np.array(False)), a.shape)
    else:
        common = result_type(a, b)
        a_c, b_c = lift(ctx, a, common), lift(ctx, b, common)
        ordered = sort(b_c)
        position = searchsorted(ordered, a_c)
        position = apply_ufunc(np.minimum, position, b.shape[0] - 1)
        found = apply_ufunc(np.equal, np.take(ordered, position), a_c)
    if invert:
        found = apply_ufunc(np.logical_not, found)
    found = lift(ctx, found)
    found.scalar = False  # NumPy's isin returns an ndarray, 0-d included
    return found


lexsort.__jk_support__ = "partly: keys a tuple or an array (NumPy does not dispatch a list of traced keys)"
