"""`dynamic_slice` and `dynamic_update_slice`: a window of static size at run-time start
positions (JAX-like), with NumPy's index rules decided here, once, for every backend.

- `dynamic_slice`: inputs `[x, *starts]` (one 0-d integer per dimension of x, any integer
  dtype); params `sizes`; output `x[s0:s0+size0, s1:s1+size1, ...]`.
- `dynamic_update_slice`: inputs `[x, update, *starts]`, update of x's dtype; output x with
  that window replaced by `update` (a new array: the IR is functional).

A start below 0 is wrapped by adding the axis length (NumPy's negative indices); a start that
is then outside `[0, n - size]` raises NumPy's `IndexError: index 7 is out of bounds for axis 0
with size 5` (the value the user wrote). The tracer only emits a slice's window when it has
proved it in bounds (numpy/_dynamic.py), so for slices the check never fires, and integer
indices get NumPy's error.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .primitives import Primitive, register
from .symdim import Dim, SymDim, max_dim, min_dim
from .types import AType


def normalize_start(start: int, n: int, size: int, axis: int) -> int:
    """NumPy's rule for one run-time index: wrap a negative value, raise IndexError outside."""
    s = start + n if start < 0 else start
    if not 0 <= s <= n - size:
        raise IndexError(f"index {start} is out of bounds for axis {axis} with size {n}")
    return s


def _window(shape: Sequence[int], starts: Sequence[np.ndarray], sizes: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(s, s + k) for s, k in
                 ((normalize_start(int(st), n, k, d), k) for d, (st, n, k) in enumerate(zip(starts, shape, sizes))))


def _check_starts(x: AType, starts: Sequence[AType], what: str) -> None:
    if len(starts) != x.ndim:
        raise TypeError(f"{what}: {x.ndim} dimensions but {len(starts)} start indices")
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"{what}: start indices must be 0-d integers, got {s}")


def _fits(k: Dim, n: Dim) -> bool:
    """A window of size k (its largest value, when symbolic) fits an axis of length n."""
    if isinstance(n, SymDim):
        return k == n or (not isinstance(k, SymDim) and k <= n.lo)
    return 0 <= min_dim(k) and max_dim(k) <= n


def _dynamic_slice_rule(in_avals: list[AType], *, sizes: tuple, layout: tuple | None = None) -> list[AType]:
    """A symbolic size (a slice length that depends on a loop index) comes with a `layout` per
    axis: where its padded window lies (passes/lower_symbolic.py); the tracer proved it."""
    x, starts = in_avals[0], in_avals[1:]
    _check_starts(x, starts, "dynamic_slice")
    if len(sizes) != x.ndim or not all(_fits(k, n) for k, n in zip(sizes, x.shape)):
        raise ValueError(f"dynamic_slice: sizes {sizes} do not fit {x}")
    return [AType(tuple(sizes), x.dtype)]


def _dynamic_slice_impl(x: np.ndarray, *starts: np.ndarray, sizes: tuple[int, ...], layout: tuple | None = None
                        ) -> list[np.ndarray]:
    return [np.array(x[_window(x.shape, starts, sizes)], order="C")]


register(Primitive("dynamic_slice", "library", _dynamic_slice_rule, _dynamic_slice_impl,
                   unread="step"))  # an unread a[i] still raises


def _dynamic_update_rule(in_avals: list[AType], *, layout: tuple | None = None) -> list[AType]:
    x, update, starts = in_avals[0], in_avals[1], in_avals[2:]
    _check_starts(x, starts, "dynamic_update_slice")
    if update.dtype != x.dtype or update.ndim != x.ndim or not all(_fits(k, n) for k, n in zip(update.shape, x.shape)):
        raise ValueError(f"dynamic_update_slice: update {update} does not fit {x}")
    return [x]


def _dynamic_update_impl(x: np.ndarray, update: np.ndarray, *starts: np.ndarray, layout: tuple | None = None
                         ) -> list[np.ndarray]:
    window = _window(x.shape, starts, update.shape)  # raises before anything is copied
    out = np.array(x, order="C", copy=True)
    out[window] = update
    return [out]


register(Primitive("dynamic_update_slice", "library", _dynamic_update_rule, _dynamic_update_impl, unread="step"))
