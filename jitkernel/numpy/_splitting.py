"""Splitting an array into pieces: split, array_split, hsplit, vsplit, dsplit, unstack.

Each piece is a static slice (or an index) of the traced array: an index map, a view of its
argument as in NumPy. The section count and the split indices decide how many results there
are and their shapes, so they must be static; a traced one is refused with a message that says
so. The code follows NumPy's own Python implementation (numpy/lib/_shape_base_impl.py), so its
errors are NumPy's: IndexError for an axis past the shape, ValueError for an unequal division.

>>> import numpy as np, jitkernel as jk
>>> [p.tolist() for p in jk.jit(lambda a: np.array_split(a, 3))(np.arange(5.0))]
[[0.0, 1.0], [2.0, 3.0], [4.0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ..trace.operands import context_of, lift
from ._shape import moveaxis, swapaxes

__all__ = ["split", "array_split", "hsplit", "vsplit", "dsplit", "unstack"]


def _static_sections(value: Any, fname: str) -> Any:
    """The section count or split indices, refused when traced (the number of results and
    their shapes would depend on a run-time value)."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    if any(isinstance(v, Tracer) for v in items):
        raise UnsupportedOperationError(
            f"numpy.{fname}: a traced indices_or_sections is not supported inside jit (the number of "
            "pieces and their shapes would depend on it); pass it as a static argument (static_argnames)")
    return value


def _division_points(n_total: int, indices_or_sections: Any) -> list[int]:
    """NumPy's array_split boundaries: [0, *indices, n] for indices, near-equal sections for a
    count (the first n % count sections one longer)."""
    try:
        return [0] + list(indices_or_sections) + [n_total]
    except TypeError:
        n_sections = int(indices_or_sections)
        if n_sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(n_total, n_sections)
        sizes = [0] + extras * [each + 1] + (n_sections - extras) * [each]
        return np.array(sizes, dtype=np.intp).cumsum().tolist()


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    """numpy.array_split: static slices along `axis` (a list of views)."""
    ctx = context_of(ary)
    if ctx is None:
        return np.array_split(ary, indices_or_sections, axis)
    _static_sections(indices_or_sections, "array_split")
    t = lift(ctx, ary)
    n_total = t.shape[axis]  # NumPy reads the length first: an axis past the shape is an IndexError
    points = _division_points(n_total, indices_or_sections)
    moved = swapaxes(t, axis, 0)
    return [swapaxes(moved[points[i]:points[i + 1]], axis, 0) for i in range(len(points) - 1)]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    """numpy.split: array_split that requires a section count to divide the axis evenly."""
    ctx = context_of(ary)
    if ctx is None:
        return np.split(ary, indices_or_sections, axis)
    _static_sections(indices_or_sections, "split")
    try:
        len(indices_or_sections)
    except TypeError:
        if lift(ctx, ary).shape[axis] % indices_or_sections:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(ary, indices_or_sections, axis)


def _ndim(ary: Any) -> int:
    ctx = context_of(ary)
    return lift(ctx, ary).ndim if ctx is not None else np.ndim(ary)


def hsplit(ary: Any, indices_or_sections: Any) -> Any:
    """numpy.hsplit: split along axis 1 (axis 0 of a 1-d array)."""
    if _ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if _ndim(ary) > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> Any:
    """numpy.vsplit: split along axis 0 of an array of 2 or more dimensions."""
    if _ndim(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary: Any, indices_or_sections: Any) -> Any:
    """numpy.dsplit: split along axis 2 of an array of 3 or more dimensions."""
    if _ndim(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def unstack(x: Any, /, *, axis: int = 0) -> Any:
    """numpy.unstack: the tuple of x's slices along `axis` (NumPy's tuple(moveaxis(x, axis, 0)))."""
    ctx = context_of(x)
    if ctx is None:
        return np.unstack(x, axis=axis)
    t = lift(ctx, x)
    if t.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = moveaxis(t, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


for _f in (split, array_split, hsplit, vsplit, dsplit):
    _f.__jk_support__ = "partly: indices_or_sections must be static"
