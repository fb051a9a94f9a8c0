"""Joining arrays: column_stack, row_stack, dstack and block, as reshapes and concatenations
(index maps that fuse with their consumers).

They follow NumPy's own Python implementations (numpy/lib/_shape_base_impl.py and
numpy/_core/shape_base.py): every operand is first made an ndarray (a Python scalar becomes a
strong array, as np.asanyarray makes it, so the result dtype is NumPy's), then the pieces are
concatenated; NumPy's errors (mismatched list depths, tuples in np.block, empty lists) are
raised at trace time with its messages.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.block([[a, a], [a, 2 * a]]))(np.ones((1, 1))).tolist()
[[1.0, 1.0], [1.0, 2.0]]
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ..trace.tracer import Tracer
from ..trace.operands import context_of, lift, shape_of
from ._shape import atleast_2d, atleast_3d, concatenate, reshape, transpose
from ..trace.views import fresh

__all__ = ["column_stack", "row_stack", "dstack", "block"]


def _as_array(ctx: Any, a: Any) -> Tracer:
    """np.asanyarray(a) as a Tracer: a Python scalar is a strong array (not NEP 50's weak one)."""
    t = lift(ctx, a if isinstance(a, Tracer) else np.asarray(a))
    if t.weak is not None:
        t = Tracer(ctx, t.ir_var)
    return t


def column_stack(tup: Sequence[Any]) -> Any:
    """numpy.column_stack: 1-d operands become columns, then concatenate along axis 1."""
    tup = list(tup)
    ctx = context_of(*tup)
    if ctx is None:
        return np.column_stack(tup)
    arrays = []
    for v in tup:
        arr = _as_array(ctx, v)
        if arr.ndim < 2:  # NumPy: array(arr, ndmin=2).T
            arr = transpose(reshape(arr, (1,) * (2 - arr.ndim) + arr.shape))
        arrays.append(arr)
    return concatenate(arrays, 1)


def row_stack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """numpy.row_stack: NumPy 2's deprecated alias of vstack (with its DeprecationWarning)."""
    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
    tup = list(tup)
    if context_of(*tup) is None:
        return np.vstack(tup, dtype=dtype, casting=casting)
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype, casting=casting)


def dstack(tup: Sequence[Any]) -> Any:
    """numpy.dstack: operands made at least 3-d, concatenated along axis 2."""
    tup = list(tup)
    if context_of(*tup) is None:
        return np.dstack(tup)
    arrs = atleast_3d(*tup)
    return concatenate(arrs if isinstance(arrs, tuple) else (arrs,), 2)


# ----------------------------------------------------------------------------- block

def _format_index(index: list) -> str:
    return "arrays" + "".join(f"[{i}]" for i in index if i is not None)


def _check_depths(arrays: Any, parent_index: list) -> tuple[list, int, int]:
    """NumPy's _block_check_depths_match: (index of a bottom element, largest operand ndim,
    total size); a bottom empty list has None as its last index."""
    if isinstance(arrays, tuple):
        raise TypeError(f"{_format_index(parent_index)} is a tuple. Only lists can be used to arrange blocks, "
                        "and np.block does not allow implicit conversion from tuple to ndarray.")
    if isinstance(arrays, list) and arrays:
        results = [_check_depths(arr, parent_index + [i]) for i, arr in enumerate(arrays)]
        first_index, max_ndim, size = results[0]
        for index, ndim, part in results[1:]:
            size += part
            max_ndim = max(max_ndim, ndim)
            if len(index) != len(first_index):
                raise ValueError(f"List depths are mismatched. First element was at depth {len(first_index)}, "
                                 f"but there is an element at depth {len(index)} ({_format_index(index)})")
            if index[-1] is None:
                first_index = index
        return first_index, max_ndim, size
    if isinstance(arrays, list):
        return parent_index + [None], 0, 0
    shape = shape_of(arrays)
    return parent_index, len(shape), math.prod(shape)


def _block(ctx: Any, arrays: Any, max_depth: int, result_ndim: int, depth: int = 0) -> Tracer:
    if depth < max_depth:
        parts = [_block(ctx, arr, max_depth, result_ndim, depth + 1) for arr in arrays]
        return concatenate(parts, axis=-(max_depth - depth))
    t = _as_array(ctx, arrays)
    return reshape(t, (1,) * (result_ndim - t.ndim) + t.shape) if t.ndim < result_ndim else t


def _leaves(arrays: Any) -> list:
    return [x for a in arrays for x in _leaves(a)] if isinstance(arrays, list) else [arrays]


def block(arrays: Any) -> Any:
    """numpy.block: nested lists of blocks joined along the last axes, innermost list last."""
    ctx = context_of(*_leaves(arrays)) if not isinstance(arrays, tuple) else context_of(*arrays)
    if ctx is None:
        return np.block(arrays)
    bottom_index, arr_ndim, _ = _check_depths(arrays, [])
    list_ndim = len(bottom_index)
    if bottom_index and bottom_index[-1] is None:
        raise ValueError(f"List at {_format_index(bottom_index)} cannot be empty")
    out = _block(ctx, arrays, list_ndim, max(arr_ndim, list_ndim))
    if list_ndim == 0 or out is arrays:
        out = fresh(out)  # NumPy copies: np.block(a) is a new array
    return out
