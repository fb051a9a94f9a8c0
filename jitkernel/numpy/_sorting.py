"""Sorting inside a trace: sort, argsort, partition, argpartition, searchsorted, as library steps
whose impl is NumPy's own (the same algorithm for each `kind`, so ties and NaNs, which NumPy
sorts last, come out exactly as NumPy orders them). The result shapes are static; np.unique,
whose length depends on the data, is not here (it raises UnsupportedOperationError).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda x: np.sort(x) * 2)(np.array([3.0, np.nan, 1.0]))
array([ 2.,  6., nan])
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import context_of, lift, normalize_axis
from ._shape import ravel

__all__ = ["sort", "argsort", "partition", "argpartition", "searchsorted", "unique"]


def _operand(a: Any, axis: Any) -> tuple[Tracer, int]:
    """The traced operand and its non-negative axis; axis=None sorts the flattened array."""
    t = lift(context_of(a), a)
    if axis is None:
        return ravel(t), 0
    return t, normalize_axis(operator.index(axis), t.ndim)


def _kind(dtype: np.dtype, kind: Any, stable: Any, order: Any, fname: str) -> Any:
    if order is not None:
        raise UnsupportedOperationError(f"numpy.{fname}: order= (structured arrays) is not supported inside jit")
    # NumPy validates kind/stable itself: ask it on a one-element sample (same errors).
    np.sort(np.zeros(1, dtype), kind=kind, stable=stable)
    return "stable" if stable else kind


def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    """numpy.sort: NaN sorts last; every kind ('quicksort', 'mergesort', 'heapsort', 'stable')."""
    if context_of(a) is None:
        return np.sort(a, axis=axis, kind=kind, order=order, stable=stable)
    t, ax = _operand(a, axis)
    k = _kind(t.dtype, kind, stable, order, "sort")
    return t._ctx.bind1("sort", t, axis=ax, kind=k)


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    """numpy.argsort: int64 indices; kind='stable' keeps equal elements in order."""
    if context_of(a) is None:
        return np.argsort(a, axis=axis, kind=kind, order=order, stable=stable)
    t = lift(context_of(a), a)
    if t.ndim == 0:  # NumPy argsorts a 0-d array as its 1-element ravel (axis 1 is AxisError)
        if axis is not None:
            normalize_axis(axis, 1)
        axis = None
    t, ax = _operand(t, axis)
    k = _kind(t.dtype, kind, stable, order, "argsort")
    return t._ctx.bind1("argsort", t, axis=ax, kind=k)


def _kth(kth: Any, n: int, empty: bool = False) -> Any:
    if isinstance(kth, Tracer):
        raise UnsupportedOperationError("numpy.partition: kth must be static (a Python int or a list of them) inside jit")
    ks = [operator.index(k) for k in np.atleast_1d(np.asarray(kth)).ravel()] if not isinstance(kth, (int, np.integer)) \
        else [operator.index(kth)]
    for k in ks:
        if not empty and not -n <= k < n:  # (NumPy checks kth only for an array with elements)
            raise ValueError(f"kth(={k if k >= 0 else k + n}) out of bounds ({n})")
    return ks[0] if isinstance(kth, (int, np.integer)) else tuple(ks)


def _partition(prim: str, a: Any, kth: Any, axis: Any, kind: str, order: Any) -> Any:
    if order is not None:
        raise UnsupportedOperationError(f"numpy.{prim}: order= (structured arrays) is not supported inside jit")
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    t, ax = _operand(a, axis)
    if t.ndim == 0:
        raise ValueError("Cannot partition a 0-d array")
    return t._ctx.bind1(prim, t, kth=_kth(kth, t.shape[ax], empty=t.size == 0), axis=ax)


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    """numpy.partition with static kth (an int or a sequence of ints)."""
    if context_of(a) is None:
        return np.partition(a, kth, axis=axis, kind=kind, order=order)
    return _partition("partition", a, kth, axis, kind, order)


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    """numpy.argpartition with static kth."""
    if context_of(a) is None:
        return np.argpartition(a, kth, axis=axis, kind=kind, order=order)
    return _partition("argpartition", a, kth, axis, kind, order)


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """numpy.searchsorted: a 1-d (sorted, or ordered by `sorter`), any v; int64 indices of v's shape."""
    ctx = context_of(a, v, sorter)
    if ctx is None:
        return np.searchsorted(a, v, side=side, sorter=sorter)
    np.searchsorted(np.zeros(1), 0.0, side=side)  # NumPy's ValueError for a bad side
    side = "left" if side[:1].lower() == "l" else "right"
    ins = [lift(ctx, a), lift(ctx, v)]
    if sorter is not None:
        s = lift(ctx, sorter)
        if s.shape != ins[0].shape:
            raise ValueError("sorter.size must equal a.size")
        if s.dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        ins.append(s)
    return ctx.bind1("searchsorted", *ins, side=side)


def unique(ar: Any, *args: Any, **kwargs: Any) -> Any:
    """numpy.unique: its length is the number of distinct values, known only from the data."""
    if not isinstance(ar, Tracer):  # concrete data (a constant inside the trace too): NumPy's
        return np.unique(ar, *args, **kwargs)
    raise UnsupportedOperationError(
        f"numpy.unique is not supported inside a jitted function ({ar._where()}): "
        "its result length is the number of distinct values, which depends on the data; np.sort(x) keeps a "
        "static shape (compare neighbours: x[1:] != x[:-1])")


unique.__jk_support__ = "unsupported: data-dependent output shape (the number of distinct values)"


def _sort_in_place(self: Tracer, axis: int = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
    """ndarray.sort: sorts in place, written back with `a[...] = np.sort(a)` (the in-place
    machinery makes it visible through every view and in the caller's argument). Unlike
    np.sort, it takes no axis=None (NumPy's TypeError)."""
    self[...] = sort(self, operator.index(axis), kind, order, stable=stable)


def _partition_in_place(self: Tracer, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> None:
    """ndarray.partition: partitions in place, as ndarray.sort."""
    self[...] = partition(self, kth, axis, kind, order)


# ndarray methods of the same names (a.argsort(), a.searchsorted(v), a.sort(), ...).
Tracer.sort = _sort_in_place
Tracer.partition = _partition_in_place
Tracer.argsort = lambda self, axis=-1, kind=None, order=None, *, stable=None: argsort(self, axis, kind, order, stable=stable)
Tracer.searchsorted = lambda self, v, side="left", sorter=None: searchsorted(self, v, side, sorter)
Tracer.argpartition = lambda self, kth, axis=-1, kind="introselect", order=None: argpartition(self, kth, axis, kind, order)

# Notes for the generated support table (jitkernel/numpy/support_table.py, branch arrayfns).
sort.__jk_support__ = "partly: order= (structured arrays) unsupported"
argsort.__jk_support__ = "partly: order= (structured arrays) unsupported"
partition.__jk_support__ = "partly: static kth"
argpartition.__jk_support__ = "partly: static kth"
